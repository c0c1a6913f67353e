"""`advisor fit [MODEL...]`: which plans fit in memory, with how much KV cache left, in the start-up log's words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.commands import options as opt
from advisor.commands.output import emit

if TYPE_CHECKING:
    from advisor.cost.plan import Plan


def fit(models: opt.Models = None, hw: opt.Hw = opt.DEFAULT_HW, gpus: opt.Gpus = None, tp: opt.Tp = None,
        pp: opt.Pp = None, dp: opt.Dp = None, ep: opt.Ep = None, max_model_len: opt.MaxModelLen = None,
        kv_cache_dtype: opt.KvCacheDtype = "auto", gpu_memory_utilization: opt.GpuMemoryUtilization = None,
        weight_dtype: opt.WeightDtypeOpt = None, engine: opt.EngineOpt = "vllm",
        engine_version: opt.EngineVersion = None, json_out: opt.Json = False) -> None:
    """Memory per GPU for each model and plan as the engine accounts it: weights, activation peak, non-torch
    and CUDA-graph memory, KV room and concurrency, with the start-up log lines the engine would print
    ("Model loading took", "Available KV cache memory", "GPU KV cache size", "Maximum concurrency")."""
    from advisor.commands.models import resolve_models
    from advisor.cost.sweep import fit_result, make_case, node_gpus
    from advisor.report.tables import fit_table

    profile = opt.hardware(hw, gpus)
    settings = opt.settings(max_model_len, kv_cache_dtype, gpu_memory_utilization, weight_dtype, engine,
                            engine_version=engine_version)
    plan = opt.plan_from_flags(tp, pp, dp, ep)
    n = node_gpus(profile, gpus)
    docs = []
    found, _ = resolve_models(models)
    for r in found:
        if max_model_len is not None:
            opt.check_lengths(r.arch.max_context, r.arch.model, 1, 0, max_model_len)
        for p in [plan] if plan else default_plans(n, r.arch.moe is not None):
            docs.append(fit_result(make_case(r.arch, p, profile, settings, n, r.source), profile))
    emit(docs, json_out, lambda d: fit_table(d, profile))


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
