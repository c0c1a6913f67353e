"""The single-model commands: `predict` (one model, one plan, one workload) and `fit` (which plans hold a model in
memory, with how much KV cache left). Typed results from `cost/`: a `Prediction`, a list of `FitResult`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.cost.plan import Plan
    from advisor.cost.prediction import FitResult, Prediction, Workload
    from advisor.cost.workload import Settings
    from advisor.hardware import HardwareProfile
    from advisor.hardware.cluster import Cluster


def predict(model: str, plan: Plan, hw: HardwareProfile, settings: Settings, gpus: int | None, w: Workload,
            calibration: str | None, max_model_len: int | None, cluster: Cluster | None = None) -> Prediction:
    """`model` at `plan` serving workload `w` (the plan that does not run says why, with its memory); on `cluster`'s
    nodes with --nodes."""
    import numpy as np

    from advisor.calibrate.store import terms_for
    from advisor.cost.sweep import evaluate, make_case, not_running
    from advisor.decide.candidates import check_lengths, resolve_models

    (r,), _ = resolve_models([model])
    check_lengths(r.arch.max_context, r.arch.model, w.input_len, w.output_len, max_model_len)
    terms, calibrated = terms_for(hw, settings.engine, calibration)
    case = make_case(r.arch, plan, hw, settings, gpus, r.source, cluster)
    if not case.runs:
        return not_running(case, hw, w, calibrated)
    sweep = evaluate([case], terms, np.array([w.concurrency]), np.array([w.input_len]), np.array([w.output_len]),
                     calibrated)
    return sweep.at(0, w.concurrency)


def default_plans(num_gpus: int, moe: bool) -> list[Plan]:
    """TP over 1, 2, 4, ... GPUs, and for MoE models TP with EP over the same GPUs."""
    from advisor.cost.plan import Plan

    plans, tp = [], 1
    while tp <= num_gpus:
        plans.append(Plan(tp=tp))
        if moe and tp > 1:
            plans.append(Plan(tp=tp, ep=tp))
        tp *= 2
    return plans


def fit(models: list[str] | None, hw: HardwareProfile, settings: Settings, plan: Plan | None, gpus: int | None,
        max_model_len: int | None, cluster: Cluster | None = None) -> tuple[list[FitResult], list[str]]:
    """Each model's memory fit at `plan` (or at `default_plans`), and a line for each model that could not be
    read (`candidates.problem`)."""
    from advisor.cost.plan import spanning_plans
    from advisor.cost.sweep import fit_result, make_case, node_gpus
    from advisor.decide.candidates import check_lengths, resolve_models, skipped

    n = node_gpus(hw, gpus)
    found, missing = resolve_models(models)
    docs = []
    for r in found:
        if max_model_len is not None:
            check_lengths(r.arch.max_context, r.arch.model, 1, 0, max_model_len)
        moe = r.arch.moe is not None
        for p in [plan] if plan else default_plans(n, moe) + spanning_plans(cluster, moe):
            docs.append(fit_result(make_case(r.arch, p, hw, settings, n, r.source, cluster), hw))
    return docs, skipped(missing)
