"""Result documents of `fit` and `predict` (`--json`) built from cost-model outputs."""

from __future__ import annotations

from typing import Any

import numpy as np

from advisor.cost.plan import Plan
from advisor.cost.predict import Case
from advisor.hardware import HardwareProfile

BREAKDOWN = ("weights", "kv", "compute", "comm", "overhead")
BOTTLENECK_WORD = {"weights": "weight reads (memory)", "kv": "KV reads (memory)", "compute": "compute",
                   "comm": "communication", "overhead": "fixed overheads"}


def plan_doc(plan: Plan) -> dict[str, Any]:
    return {"tp": plan.tp, "pp": plan.pp, "dp": plan.dp, "ep": plan.ep, "label": plan.label(), "gpus": plan.gpus}


def fit_doc(case: Case, hw: HardwareProfile, source: str) -> dict[str, Any]:
    mem = case.memory
    per_gpu = None
    if mem is not None:
        per_gpu = {"weights_bytes": round(mem.weights_bytes), "kv_cache_bytes": round(max(mem.kv_cache_bytes, 0)),
                   "activation_bytes": round(mem.activation_bytes), "overhead_bytes": round(mem.overhead_bytes),
                   "capacity_bytes": round(mem.capacity_bytes), "budget_bytes": round(mem.budget_bytes)}
    return {
        "model": case.arch.model, "source": source, "hardware": hw.id, "plan": plan_doc(case.plan),
        "fits": case.runs, "reason": case.reason, "per_gpu": per_gpu,
        "kv_cache_tokens": mem.kv_cache_tokens if mem and case.runs else 0,
        "max_concurrency": mem.max_concurrency if mem and case.runs else 0,
        "max_model_len": mem.max_model_len if mem else None, "kv_cache_dtype": mem.kv_dtype if mem else None,
        "kv_bytes_per_token_per_gpu": mem.kv_bytes_per_token if mem else None,
        "weight_dtype": case.arch.weight_dtype,
    }


def comm_summary(res: dict[str, np.ndarray], i: int) -> dict[str, Any]:
    """Collectives per decode step and bytes per token for case i (vLLM
    `layers/linear.py: RowParallelLinear.forward`, `fused_moe/runner/moe_runner.py`)."""
    f = {k.removeprefix("feat_"): float(v[i]) for k, v in res.items() if k.startswith("feat_")}
    tp, dp, pp = int(f["tp"]), int(f["dp"]), int(f["pp"])
    ars = int(f["ar_calls"] + f["tiny_ar_calls"])
    others = (1 if tp > 1 else 0) + 2 * int(f["a2a_layers"]) + (pp - 1) + (1 if dp > 1 else 0)
    payload = f["ar_calls"] * f["hidden"] * 2 + f["tiny_ar_calls"] * 8
    return {"allreduces_per_step": ars, "collectives_per_step": ars + others,
            "allreduce_bytes_per_token": payload,
            "wire_bytes_per_token": payload * 2 * (tp - 1) / tp if tp > 1 else 0.0}


def predict_doc(case: Case, hw: HardwareProfile, res: dict[str, np.ndarray], i: int, c: int, k: int,
                workload: dict[str, int], calibrated: dict[str, Any], source: str) -> dict[str, Any]:
    """The `predict` object for case i at concurrency index c and length index k."""
    breakdown = {name: float(res[f"step_{name}"][i, c, k]) * 1e3 for name in BREAKDOWN}
    tpot = float(res["tpot_s"][i, c, k]) * 1e3
    comm = comm_summary(res, i)
    interval = None
    spread = calibrated.get("tpot_residual_pct")
    if spread:
        interval = {"tpot_ms_low": tpot * (1 + spread[0] / 100), "tpot_ms_high": tpot * (1 + spread[1] / 100)}
    return {
        **fit_doc(case, hw, source), "workload": workload,
        "ttft_ms": float(res["ttft_s"][i, c, k]) * 1e3, "tpot_ms": tpot,
        "per_user_tok_s": float(res["per_user_tok_s"][i, c, k]),
        "output_tok_s": float(res["output_tok_s"][i, c, k]),
        "running_sequences": int(res["running"][i, c, k]),
        **comm, "comm_ms_per_step": breakdown["comm"], "breakdown_ms": breakdown,
        "prefill_interference_ms": float(res["prefill_interference_s"][i, c, k]) * 1e3,
        "bottleneck": max(breakdown, key=lambda n: breakdown[n]),
        "calibrated": calibrated, "interval": interval,
    }
