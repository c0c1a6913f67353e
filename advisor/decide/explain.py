"""Reasons, from the numbers: why a plan ranks where it does, what ruled out the plans a user would try
first, and how #1 beats #2."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.cost.prediction import Prediction
from advisor.hardware import HardwareProfile

if TYPE_CHECKING:
    from advisor.cost.sweep import Case

WORD = {"weights": "reading weights", "kv": "reading KV cache", "compute": "compute",
        "comm": "communication", "overhead": "fixed per-layer/step overhead"}


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


def why(d: Prediction, case: Case) -> str:
    """One sentence from the numbers: dominant step term, collectives at what size, KV room."""
    assert d.breakdown_ms is not None and d.running_sequences is not None
    b = d.breakdown_ms
    total = sum(b.values())
    top = max(b, key=lambda k: b[k])
    arch = case.arch
    call_kb = arch.hidden_size * 2 * max(d.running_sequences // max(case.plan.dp, 1), 1) / 1024
    parts = [f"{case.plan.label()} on {case.plan.gpus} GPU{'s' if case.plan.gpus > 1 else ''}: "
             f"decode step {total:.1f} ms, {b[top] / total:.0%} {WORD[top]}"]
    if d.allreduces_per_step:
        parts.append(f"{d.allreduces_per_step} allreduces per step of {call_kb:.0f} KiB "
                     f"(hidden {arch.hidden_size}) cost {b['comm']:.1f} ms")
    kv = (d.kv_bytes_per_token_per_gpu or 0) / 1024
    mla = ", MLA latent replicated on every rank" if arch.attention == "mla" and case.plan.tp > 1 else ""
    parts.append(f"KV {kv:.1f} KiB/token/GPU{mla}, room for {d.kv_cache_tokens:,} tokens")
    return "; ".join(parts) + "."


def unfit_reason(cases: list[Case], hw: HardwareProfile) -> str:
    """Why a model runs on no plan: the reason of its largest plain-TP plan."""
    sized = [c for c in cases if c.memory is not None and c.plan.gpus == hw.topology.num_gpus and c.plan.pp == 1]
    reason = next((c.reason for c in sized if c.plan.dp == 1 and c.plan.ep == 1), None) or (
        cases[0].reason if cases else "no plan")
    return f"no plan runs on {hw.id}: largest TP plan: {reason}"


def compare(first: Prediction, second: Prediction, score1: float, score2: float, objective: str) -> str:
    """How #1 beats #2, from the breakdown term that differs most."""
    assert first.breakdown_ms is not None and second.breakdown_ms is not None
    ratio = score1 / score2 if score2 else float("inf")
    b1, b2 = first.breakdown_ms, second.breakdown_ms
    key = max(b1, key=lambda k: abs(b2[k] - b1[k]))
    return (f"{first.model} ({first.plan.label}) beats {second.model} ({second.plan.label}) "
            f"by {ratio:.2f}x on {objective}; the largest difference is {WORD[key]}: "
            f"{b1[key]:.1f} vs {b2[key]:.1f} ms per step ({first.allreduces_per_step} vs "
            f"{second.allreduces_per_step} allreduces, {(first.allreduce_bytes_per_token or 0) / 1e6:.2f} vs "
            f"{(second.allreduce_bytes_per_token or 0) / 1e6:.2f} MB payload per token).")
