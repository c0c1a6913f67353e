"""`advisor fit [MODEL...]`: which plans fit in memory, with how much KV cache left."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from advisor.commands import _options as opt
from advisor.commands._common import print_json

if TYPE_CHECKING:
    from advisor.cost.plan import Plan


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


def register(app: typer.Typer) -> None:
    @app.command()
    def fit(
        models: list[str] = typer.Argument(None, help="Models (default: every catalog model)."),
        hw: str = opt.HW, gpus: int | None = opt.GPUS,
        tp: int | None = typer.Option(None, "--tp"), pp: int | None = typer.Option(None, "--pp"),
        dp: int | None = typer.Option(None, "--dp"), ep: int | None = typer.Option(None, "--ep"),
        max_model_len: int | None = opt.MAX_MODEL_LEN, kv_cache_dtype: str = opt.KV_DTYPE,
        gpu_memory_utilization: float = opt.UTIL, weight_dtype: str | None = opt.WEIGHT_DTYPE,
        json_out: bool = opt.JSON,
    ) -> None:
        """Memory per GPU for each model and plan: weights, activations, reserve, KV room and concurrency."""
        from advisor import catalog
        from advisor.arch.sources import resolve
        from advisor.cost.predict import make_case
        from advisor.report.results import fit_doc

        profile = opt.hardware(hw, gpus)
        settings = opt.settings(max_model_len, kv_cache_dtype, gpu_memory_utilization, weight_dtype, "vllm")
        plan = opt.plan_from_flags(tp, pp, dp, ep)
        n = gpus or profile.topology.num_gpus
        docs = []
        for ref in models or catalog.ids():
            r = resolve(ref)
            plans = [plan] if plan else default_plans(n, r.arch.moe is not None)
            for p in plans:
                case = make_case(r.arch, p, profile, settings, gpus=n)
                docs.append(fit_doc(case, profile, r.source))
        if json_out:
            print_json(docs)
        else:
            from advisor.report.tables import fit_table

            fit_table(docs, profile)
