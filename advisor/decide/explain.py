"""Reasons, from the numbers: why a plan ranks where it does, what ruled out the plans a user would try
first, and how #1 beats #2."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from advisor.cost.prediction import Prediction
from advisor.hardware import HardwareProfile
from advisor.text import plural

if TYPE_CHECKING:
    from advisor.cost.sweep import Case
    from advisor.decide.query import Query
    from advisor.decide.ranked import RankedPlan

WORD = {"weights": "reading weights", "kv": "reading KV cache", "compute": "compute",
        "comm": "communication", "overhead": "fixed latency (kernel floors, per-layer and per-step time)"}


def plan_constraints(best: Case, cases: list[Case], hw: HardwareProfile) -> list[str]:
    """What ruled out the plans a user would try first: plain TP at each size up to the node. When the chosen
    plan uses DP with that same TP on a mixture-of-experts model, it says why that one fits after all: the
    experts are sharded over TP x DP ranks (vLLM `fused_moe/config.py: FusedMoEParallelConfig.make`)."""
    notes = []
    for c in cases:
        p = c.plan
        if p.pp == 1 and p.dp == 1 and p.ep == 1 and p.tp in (2, 4, 8, hw.topology.num_gpus) and not c.runs:
            note = f"TP{p.tp}: {c.reason}"
            b = best.plan
            if b.tp == p.tp and b.dp > 1 and best.arch.moe is not None and c.invalid is None:
                note += (f"; {b.label()} fits because with DP the experts are sharded over TP x DP = "
                         f"{b.tp * b.dp} GPUs, not over TP{p.tp} alone")
            notes.append(note)
    fitting = sorted((c for c in cases if c.runs), key=lambda c: (c.plan.gpus, c.plan.dp, c.plan.pp, c.plan.ep))
    if fitting and fitting[0].plan.gpus == hw.topology.num_gpus:
        notes.append(f"needs all {hw.topology.num_gpus} GPUs of the node to hold its weights")
    elif fitting:
        notes.append(f"fits on {fitting[0].plan.gpus} GPUs at the fewest ({fitting[0].plan.label()})")
    return notes


def why(d: Prediction, case: Case, missed: Query | None = None) -> str:
    """One sentence from the numbers: dominant step term, collectives at what size, KV room; queueing when users
    wait for a slot; first, when the plan misses the query's limits (`missed`), by how much."""
    assert d.breakdown_ms is not None and d.running_sequences is not None
    b = d.breakdown_ms
    total = sum(b.values())
    top = max(b, key=lambda k: b[k])
    arch = case.arch
    call_kb = arch.hidden_size * 2 * max(d.running_sequences // max(case.plan.dp, 1), 1) / 1024
    parts = [f"{case.plan.label()} on {plural(case.plan.gpus, 'GPU')}: "
             f"decode step {total:.1f} ms, {b[top] / total:.0%} {WORD[top]}"]
    if missed is not None:
        parts.insert(0, f"does not meet {missed.limits()} at any load up to {plural(missed.concurrency, 'user')}: "
                        f"closest at {plural(d.workload.concurrency, 'user')}, TPOT {d.tpot_ms:,.1f} ms, "
                        f"TTFT {d.ttft_ms:,.0f} ms")
    if d.allreduces_per_step:
        parts.append(f"{d.allreduces_per_step} allreduces per step of {call_kb:.0f} KiB "
                     f"(hidden {arch.hidden_size}) cost {b['comm']:.1f} ms")
    if case.cluster is not None:  # several nodes: which collectives cross which link, at what share of the step
        from advisor.decide.nodes import link_shares

        if shares := link_shares(d, case):
            parts.append(shares)
    if held := prefill_note(d):
        parts.append(held)
    kv = (d.kv_bytes_per_token_per_gpu or 0) / 1024
    mla = ", MLA latent replicated on every rank" if arch.attention == "mla" and case.plan.tp > 1 else ""
    parts.append(f"KV {kv:.1f} KiB/token/GPU{mla}, room for {d.kv_cache_tokens:,} tokens")
    if d.queueing:
        parts.append(d.queueing)
    return "; ".join(parts) + "."


def prefill_note(d: Prediction) -> str | None:
    """What other requests' prompt chunks add to each output token (`cost/serving.py`), when it is a tenth of TPOT
    or more; on a MoE model's DP plan, that its ranks step together (`serving.py: _lockstep`)."""
    held = d.prefill_interference_ms or 0.0
    if not d.tpot_ms or held < 0.1 * d.tpot_ms:
        return None
    lock = " (its DP ranks step together: a prompt on any rank holds all)" \
        if d.plan.dp > 1 and d.mechanism_ms.get("moe", 0.0) > 0 else ""
    return f"other requests' prefills add {held:.1f} ms per output token{lock}"


def unfit_reason(cases: list[Case], hw: HardwareProfile) -> str:
    """Why a model runs on no plan: the reason of its largest plain-TP plan."""
    sized = [c for c in cases if c.memory is not None and c.plan.gpus == hw.topology.num_gpus and c.plan.pp == 1]
    reason = next((c.reason for c in sized if c.plan.dp == 1 and c.plan.ep == 1), None) or (
        cases[0].reason if cases else "no plan")
    return f"no plan runs on {hw.id}: largest TP plan: {reason}"


def verdict(rows: tuple[RankedPlan, ...], q: Query) -> str | None:
    """When no plan meets the query's limits: say so, and name the closest plan (rows are sorted closest first)."""
    if not rows or any(r.meets for r in rows):
        return None
    c = rows[0]
    return (f"no plan meets {q.limits()} up to {plural(q.concurrency, 'user')}; the closest is {c.model} "
            f"({c.plan.label}) at {plural(c.workload.concurrency, 'user')}: TPOT {c.tpot_ms:,.1f} ms, "
            f"TTFT {c.ttft_ms:,.0f} ms")


def differences(first: Prediction, second: Prediction, objective: str) -> list[tuple[float, str]]:
    """Each computed cause of #1's advantage as (|log| of the factor it alone accounts for, its words): the
    users each runs at once (throughput and goodput score users x per-user speed), each decode-step term (how
    much #1's step would change with #2's value of that term) and the prefill interference on TPOT."""
    assert first.breakdown_ms is not None and second.breakdown_ms is not None
    out: list[tuple[float, str]] = []
    u1, u2 = first.running_sequences or 1, second.running_sequences or 1
    if objective != "latency" and u1 != u2:
        what = "users served within the limits" if objective == "goodput" else "users running at once"
        out.append((abs(math.log(u1 / u2)), f"{what}: {u1:,} vs {u2:,}"))
    b1, b2 = first.breakdown_ms, second.breakdown_ms
    step = sum(b1.values())
    for k in b1:
        if step > 0 and step + b2[k] - b1[k] > 0:
            out.append((abs(math.log((step + b2[k] - b1[k]) / step)),
                        f"{WORD[k]}: {b1[k]:.1f} vs {b2[k]:.1f} ms per decode step"))
    i1, i2 = first.prefill_interference_ms or 0.0, second.prefill_interference_ms or 0.0
    if first.tpot_ms and second.tpot_ms and i1 != i2:
        ratio = (first.tpot_ms - i1 + i2) / first.tpot_ms
        if ratio > 0:
            out.append((abs(math.log(ratio)), f"other requests' prefills slowing decode: {i1:.1f} vs {i2:.1f} ms "
                                              "per output token"))
    return sorted(out, reverse=True)


def compare(first: RankedPlan, second: RankedPlan, q: Query) -> str | None:
    """How #1 beats #2, naming the computed difference that accounts for most of it (`differences`)."""
    if not first.meets:
        return None
    head = f"{first.model} ({first.plan.label}) beats {second.model} ({second.plan.label})"
    if not second.meets:
        return f"{head}: only {first.model} meets {q.limits()}."
    if second.score <= 0:
        return None
    diffs = differences(first, second, q.objective)
    cause = f"; the largest difference is {diffs[0][1]}" if diffs else ""
    then = f" (then {diffs[1][1]})" if len(diffs) > 1 else ""
    return f"{head} by {first.score / second.score:.2f}x on {q.objective}{cause}{then}."


def _q(d: Any) -> str:
    return "unknown" if d.quality is None else f"{d.quality:g}"


def quality_tradeoff(rows: Sequence[Any], q: Query) -> str | None:
    """best-under-slo: the best model within the targets, the runner-up, and what doubling the best's throughput
    costs in quality (the best-quality model within the targets that serves at least twice its tok/s)."""
    ok = [d for d in rows if d.meets]
    if not ok:
        return None
    best = ok[0]
    scale = best.quality_benchmark or q.quality_scale
    parts = [f"best within {q.limits()} at {q.concurrency:,} users: {best.model} ({best.plan.label}), quality "
             f"{_q(best)} on {scale}, {best.output_tok_s:,.0f} tok/s"]
    if len(ok) > 1:
        r = ok[1]
        dq = (f" ({abs(best.quality - r.quality):g} {'lower' if r.quality <= best.quality else 'higher'})"
              if best.quality is not None and r.quality is not None else "")
        parts.append(f"runner-up: {r.model} ({r.plan.label}), quality {_q(r)}{dq}, {r.output_tok_s:,.0f} tok/s "
                     f"({r.output_tok_s / best.output_tok_s:.2f}x the best's)")
    faster = [d for d in ok if d.output_tok_s >= 2 * best.output_tok_s and d.quality is not None]
    if best.quality is None:
        pass
    elif faster:
        f = faster[0]  # ok is in quality order: the first that doubles is the cheapest in quality
        gap = best.quality - f.quality
        blur = (" (within the two scores' published 95% intervals: not distinguishable)"
                if best.quality_ci95 and f.quality_ci95 and abs(gap) <= best.quality_ci95 + f.quality_ci95 else "")
        parts.append(f"2x the throughput ({f.output_tok_s:,.0f} tok/s) costs {gap:g} quality points{blur}: "
                     f"{f.model} ({_q(f)})")
    else:
        parts.append("no model within the targets serves 2x its throughput")
    return "; ".join(parts)
