"""Choose each model's best plan for an objective, rank the models, and say why from the numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.arch.sources import Resolved
from advisor.cost.predict import Case, all_cases, evaluate
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile
from advisor.report.command import serve_command
from advisor.report.results import predict_doc

GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Query:
    objective: str  # latency | throughput | goodput
    concurrency: int
    input_len: int
    output_len: int
    max_tpot_ms: float | None = None
    max_ttft_ms: float | None = None


def rank(resolved: list[Resolved], hw: HardwareProfile, settings: Settings, terms: Terms, q: Query,
         calibrated: dict[str, Any], gpus: int | None = None, all_plans: bool = False
         ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ranked rows, models that run nowhere). One vectorised evaluation covers every model and plan."""
    per_model = {r.arch.model: (r, all_cases(r.arch, hw, settings, gpus)) for r in resolved}
    runnable = [(name, c) for name, (_, cases) in per_model.items() for c in cases if c.runs]
    grid = np.array(sorted(set(GRID) | {q.concurrency}), dtype=float)
    unfit = [_unfit_row(r, cases, hw) for r, cases in per_model.values() if not any(c.runs for c in cases)]
    if not runnable:
        return [], unfit
    res = evaluate([c for _, c in runnable], hw, settings, terms, grid, np.array([q.input_len]),
                   np.array([q.output_len]))
    scores, cidx = _scores(res, grid, q)
    rows: list[dict[str, Any]] = []
    for name, (r, cases) in per_model.items():
        idx = [i for i, (n, _) in enumerate(runnable) if n == name]
        if not idx:
            continue
        order = sorted(idx, key=lambda i: (-scores[i], runnable[i][1].plan.gpus))
        for i in (order if all_plans else order[:1]):
            rows.append(_row(r, runnable[i][1], cases, hw, settings, res, i, int(cidx[i]), grid, q, calibrated,
                             float(scores[i])))
    rows.sort(key=lambda d: -d["score"])
    for n, d in enumerate(rows, 1):
        d["rank"] = n
    return rows, unfit


def _scores(res: dict[str, np.ndarray], grid: np.ndarray, q: Query) -> tuple[np.ndarray, np.ndarray]:
    """Score per case and the concurrency index it is reported at."""
    n = res["tpot_s"].shape[0]
    if q.objective == "latency":
        c = int(np.searchsorted(grid, 1))
        return res["per_user_tok_s"][:, c, 0], np.full(n, c)
    if q.objective == "throughput":
        c = int(np.searchsorted(grid, q.concurrency))
        return res["output_tok_s"][:, c, 0], np.full(n, c)
    ok = np.ones_like(res["tpot_s"][:, :, 0], dtype=bool)
    if q.max_tpot_ms is not None:
        ok &= res["tpot_s"][:, :, 0] * 1e3 <= q.max_tpot_ms
    if q.max_ttft_ms is not None:
        ok &= res["ttft_s"][:, :, 0] * 1e3 <= q.max_ttft_ms
    ok &= grid[None, :] <= q.concurrency
    good = np.where(ok, res["output_tok_s"][:, :, 0], 0.0)
    return good.max(axis=1), good.argmax(axis=1)


def _row(r: Resolved, case: Case, cases: list[Case], hw: HardwareProfile, settings: Settings,
         res: dict[str, np.ndarray], i: int, c: int, grid: np.ndarray, q: Query, calibrated: dict[str, Any],
         score: float) -> dict[str, Any]:
    workload = {"concurrency": int(grid[c]), "input_len": q.input_len, "output_len": q.output_len}
    doc = predict_doc(case, hw, res, i, c, 0, workload, calibrated, r.source)
    mem = case.memory
    assert mem is not None
    doc.update(score=score, objective=q.objective,
               constraints=plan_constraints(case, cases, hw),
               command=serve_command(case.arch.model, case.plan, hw, settings, mem.max_model_len, mem.kv_dtype,
                                     case.arch.kv_dtype))
    doc["why"] = why(doc, case)
    return doc


def plan_constraints(best: Case, cases: list[Case], hw: HardwareProfile) -> list[str]:
    """What ruled out the plans a user would try first: plain TP at each size up to the node."""
    notes = []
    for c in cases:
        p = c.plan
        if p.pp == 1 and p.dp == 1 and p.ep == 1 and p.tp in (2, 4, 8, hw.topology.num_gpus) and not c.runs:
            notes.append(f"TP{p.tp}: {c.reason}")
    fitting = sorted((c for c in cases if c.runs), key=lambda c: (c.plan.gpus, c.plan.dp, c.plan.pp, c.plan.ep))
    if fitting and fitting[0].plan.gpus == hw.topology.num_gpus:
        notes.append(f"needs all {hw.topology.num_gpus} GPUs of the node to hold its weights")
    elif fitting:
        notes.append(f"fits on {fitting[0].plan.gpus} GPUs at the fewest ({fitting[0].plan.label()})")
    return notes


def why(d: dict[str, Any], case: Case) -> str:
    """One sentence from the numbers: dominant step term, collectives at what size, KV room."""
    b = d["breakdown_ms"]
    total = sum(b.values())
    top = max(b, key=lambda k: b[k])
    arch = case.arch
    call_kb = arch.hidden_size * 2 * max(d["running_sequences"] // max(case.plan.dp, 1), 1) / 1024
    parts = [f"{case.plan.label()} on {case.plan.gpus} GPU{'s' if case.plan.gpus > 1 else ''}: "
             f"decode step {total:.1f} ms, {b[top] / total:.0%} {_WORD[top]}"]
    if d["allreduces_per_step"]:
        parts.append(f"{d['allreduces_per_step']} allreduces per step of {call_kb:.0f} KiB "
                     f"(hidden {arch.hidden_size}) cost {b['comm']:.1f} ms")
    kv = d["kv_bytes_per_token_per_gpu"] / 1024
    mla = ", MLA latent replicated on every rank" if arch.attention == "mla" and case.plan.tp > 1 else ""
    parts.append(f"KV {kv:.1f} KiB/token/GPU{mla}, room for {d['kv_cache_tokens']:,} tokens")
    return "; ".join(parts) + "."


_WORD = {"weights": "reading weights", "kv": "reading KV cache", "compute": "compute",
         "comm": "communication", "overhead": "fixed per-layer/step overhead"}


def _unfit_row(r: Resolved, cases: list[Case], hw: HardwareProfile) -> dict[str, Any]:
    sized = [c for c in cases if c.memory is not None and c.plan.gpus == hw.topology.num_gpus and c.plan.pp == 1]
    reason = next((c.reason for c in sized if c.plan.dp == 1 and c.plan.ep == 1), None) or (
        cases[0].reason if cases else "no plan")
    return {"model": r.arch.model, "source": r.source, "fits": False,
            "reason": f"no plan runs on {hw.id}: largest TP plan: {reason}"}


def compare(first: dict[str, Any], second: dict[str, Any]) -> str:
    """How #1 beats #2, from the breakdown term that differs most."""
    ratio = first["score"] / second["score"] if second["score"] else float("inf")
    b1, b2 = first["breakdown_ms"], second["breakdown_ms"]
    key = max(b1, key=lambda k: abs(b2[k] - b1[k]))
    return (f"{first['model']} ({first['plan']['label']}) beats {second['model']} ({second['plan']['label']}) "
            f"by {ratio:.2f}x on {first['objective']}; the largest difference is {_WORD[key]}: "
            f"{b1[key]:.1f} vs {b2[key]:.1f} ms per step ({first['allreduces_per_step']} vs "
            f"{second['allreduces_per_step']} allreduces, {first['allreduce_bytes_per_token'] / 1e6:.2f} vs "
            f"{second['allreduce_bytes_per_token'] / 1e6:.2f} MB payload per token).")
