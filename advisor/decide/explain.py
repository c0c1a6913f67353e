"""Reasons, from the numbers: why a plan ranks where it does, what ruled out the plans a user would try
first, what speculation assumed, and how #1 beats #2."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from advisor.cost.prediction import Prediction
from advisor.hardware import HardwareProfile
from advisor.text import plural

if TYPE_CHECKING:
    from advisor.cost.sweep import Case
    from advisor.cost.workload import Settings
    from advisor.decide.query import Query
    from advisor.decide.ranked import RankedPlan
    from advisor.decide.replicas import Deployment

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
        notes.append(f"fits on {plural(fitting[0].plan.gpus, 'GPU')} at the fewest ({fitting[0].plan.label()})")
    return notes


def why(d: Prediction, case: Case, missed: Query | None = None, dep: Deployment | None = None) -> str:
    """One sentence from the numbers: how the deployment's replicas share the users (`dep`), the dominant step
    term, collectives at what size, KV room; queueing when users wait for a slot; first, when the plan misses the
    query's limits (`missed`), by how much."""
    assert d.breakdown_ms is not None and d.running_sequences is not None
    b = d.breakdown_ms
    total = sum(b.values())
    top = max(b, key=lambda k: b[k])
    arch = case.arch
    call_kb = arch.hidden_size * 2 * max(d.running_sequences // max(case.plan.dp, 1), 1) / 1024
    parts = [f"{case.plan.label()} on {plural(case.plan.gpus, 'GPU')}: "
             f"decode step {total:.1f} ms, {b[top] / total:.0%} {WORD[top]}"]
    if dep is not None and dep.replicas > 1 and dep.users > 1:
        parts[0] = f"{sharing(dep, case.plan.label())}; each is {parts[0]}"
    if missed is not None:
        parts.insert(0, _missed(missed, d, dep))
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


def sharing(dep: Deployment, label: str) -> str:
    """How the replicas share the users, e.g. "8 replicas of TP1 share the 64 users, 8 on each"."""
    load = [u for u in dep.users_per_replica if u > 0]
    if len(load) < dep.replicas:
        each = f"one on each of {len(load)} of them"
    elif load[0] == load[-1]:
        each = f"{load[0]:,} on each"
    else:
        each = f"{load[0]:,} on the busiest, {load[-1]:,} on the others"
    return f"{dep.replicas} replicas of {label} share the {dep.users:,} users, {each}"


def _missed(q: Query, d: Prediction, dep: Deployment | None) -> str:
    """How a plan misses the query's limits: best-under-slo asks at one load; goodput at any load up to it."""
    users = dep.users if dep is not None else d.workload.concurrency
    at = f"TPOT {d.tpot_ms:,.1f} ms, TTFT {d.ttft_ms:,.0f} ms"
    if q.objective == "best-under-slo":
        return f"does not meet {q.limits()} at {plural(users, 'user')}: {at}"
    return (f"does not meet {q.limits()} at any load up to {plural(q.concurrency, 'user')}: closest at "
            f"{plural(users, 'user')}, {at}")


def speculation_note(d: Prediction, case: Case, settings: Settings, plain_tpot_ms: float | None) -> str | None:
    """With --speculative: the MTP assumption beside the plan (drafts per step, acceptance length and its source,
    the decode step against TPOT, TPOT of the same plan without it), or why this row does not speculate."""
    if not settings.speculative:
        return None
    if not d.spec_tokens:
        from advisor.cost.speculative import acceptance_for

        why_not = (f"{case.arch.model} has no MTP layers" if not case.arch.mtp_layers
                   else acceptance_for(case.arch.model, settings.spec_acceptance)[1])
        return f"--speculative asked, but this row does not speculate: {why_not}; predicted without speculation"
    step = sum((d.breakdown_ms or {}).values())
    text = (f"MTP speculative decoding: {plural(d.spec_tokens, 'draft token')} per step, acceptance length "
            f"{d.tokens_per_step or 1.0:.2f} tokens per sequence per step ({d.spec_acceptance_source}); each "
            f"{step:.1f} ms decode step gives TPOT {d.tpot_ms or 0.0:.1f} ms")
    if plain_tpot_ms is not None:
        text += f"; without MTP this plan's TPOT is {plain_tpot_ms:.1f} ms"
    return text


def not_kept(spec: RankedPlan, plain: RankedPlan, q: Query) -> str:
    """--speculative auto kept the plain row: why (the row with MTP ranks lower, or none could speculate)."""
    if not spec.spec_tokens:
        return spec.speculation or "--speculative auto: this row does not speculate"
    return (f"MTP (--speculative auto) not kept: with it the best plan ({spec.plan.label}) scores "
            f"{spec.score:,.1f} on {q.objective} against {plain.score:,.1f} without")


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
    """Why a model runs on no plan: the reason of its largest plain-TP plan, unless another plan is closer to
    running for another kind of reason (`_closeness`: a plan refused only by the engine's rules whose weights fit,
    then one whose memory alone falls short, by how far): then that plan's, named."""
    sized = [c for c in cases if c.memory is not None and c.plan.gpus == hw.topology.num_gpus and c.plan.pp == 1]
    largest = next((c for c in sized if c.plan.dp == 1 and c.plan.ep == 1), None)
    reason = (largest.reason if largest else None) or (cases[0].reason if cases else "no plan")
    closest = min(cases, key=_closeness, default=None)
    if closest is not None and largest is not None and _closeness(closest)[:2] < _closeness(largest)[:2]:
        return f"no plan runs on {hw.id}: the closest to running, {closest.plan.label()}: {closest.reason}"
    return f"no plan runs on {hw.id}: largest TP plan: {reason}"


def _closeness(c: Case) -> tuple[bool, bool, float]:
    """How far a plan that does not run is from running (smaller is closer): whether its memory falls short,
    whether the engine refuses its shape, and by how much its memory falls short (the share of the budget the
    KV room is below zero)."""
    m = c.memory
    if m is None:
        return True, True, math.inf
    short = not m.fits
    return short, c.invalid is not None, max(-m.available_kv_bytes, 0.0) / max(m.budget_bytes, 1.0)


def verdict(rows: tuple[RankedPlan, ...], q: Query) -> str | None:
    """When no plan meets the query's limits: say so, and name the closest plan (rows are sorted closest first)."""
    if not rows or any(r.meets for r in rows):
        return None
    c = rows[0]
    users = c.deployment.users if c.deployment is not None else c.workload.concurrency
    return (f"no plan meets {q.limits()} up to {plural(q.concurrency, 'user')}; the closest is {c.model} "
            f"({c.plan.label}) at {plural(users, 'user')}: TPOT {c.tpot_ms:,.1f} ms, "
            f"TTFT {c.ttft_ms:,.0f} ms")


def differences(first: Prediction, second: Prediction, objective: str) -> list[tuple[float, str]]:
    """Each computed cause of #1's advantage as (|log| of the factor it alone accounts for, its words): the
    users each runs at once (throughput and goodput score users x per-user speed), each decode-step term (how
    much #1's step would change with #2's value of that term) and the prefill interference on TPOT."""
    assert first.breakdown_ms is not None and second.breakdown_ms is not None
    out: list[tuple[float, str]] = []
    u1, u2 = _running(first), _running(second)
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


def _running(d: Prediction) -> int:
    """Sequences decoding at once in the whole deployment (every replica), else in the plan."""
    dep = getattr(d, "deployment", None)
    return dep.running if dep is not None else d.running_sequences or 1


def compare(first: RankedPlan, second: RankedPlan, q: Query) -> str | None:
    """How #1 beats #2, naming the computed difference that accounts for most of it (`differences`); nothing when
    #1 does not score higher (a "beats by" factor is never below 1)."""
    if not first.meets:
        return None
    head = f"{first.model} ({first.plan.label}) beats {second.model} ({second.plan.label})"
    if not second.meets:
        return f"{head}: only {first.model} meets {q.limits()}."
    if second.score <= 0 or first.score < second.score:
        return None
    diffs = differences(first, second, q.objective)
    cause = f"; the largest difference is {diffs[0][1]}" if diffs else ""
    then = f" (then {diffs[1][1]})" if len(diffs) > 1 else ""
    return f"{head} by {first.score / second.score:.2f}x on {q.objective}{cause}{then}."


def compare_cost(first: RankedPlan, second: RankedPlan, q: Query) -> str | None:
    """Rows ordered by $/Mtok (several boxes, each at its price): how much cheaper #1 is than #2 and from what
    (each box's GPU-hour price, GPUs and tok/s)."""
    if not first.meets or first.usd_per_mtok is None or second.usd_per_mtok is None:
        return None

    def name(d: RankedPlan) -> str:
        return f"{d.model} on {d.hardware} ({d.plan.label})"

    if not second.meets:
        return f"{name(first)} is first: only it meets {q.limits()}."
    if first.usd_per_mtok <= 0 or first.usd_per_mtok > second.usd_per_mtok:
        return None

    def spend(d: RankedPlan) -> str:
        gpus = d.deployment.gpus if d.deployment is not None else d.plan.gpus
        return (f"${d.usd_per_mtok:,.2f} ({gpus} GPUs at ${d.gpu_hour_price:g}/GPU-hour, "
                f"{d.node_output_tok_s or 0:,.0f} tok/s)")

    return (f"{name(first)} costs {second.usd_per_mtok / first.usd_per_mtok:.2f}x less per million output tokens "
            f"than {name(second)}: {spend(first)} against {spend(second)}.")


def _q(d: Any) -> str:
    return "unknown" if d.quality is None else f"{d.quality:g}"


def _total(d: Any) -> float:
    """Output tok/s of the whole deployment (every replica) at the row's load."""
    dep = getattr(d, "deployment", None)
    return float(dep.output_tok_s if dep is not None else d.output_tok_s)


def _same_model(a: Any, b: Any) -> bool:
    """Whether two rows are one model: the same id, or a re-upload whose quality is the other's own score (a
    re-quantized checkpoint scored as its original)."""
    return a.model == b.model or (a.quality_measured_on is not None and
                                  a.quality_measured_on == b.quality_measured_on)


def quality_tradeoff(rows: Sequence[Any], q: Query) -> str | None:
    """best-under-slo: the best model within the targets, the runner-up (another model: re-uploads of the best,
    scored as it, are named and passed over), and what doubling the best's throughput costs in quality (the
    best-quality model within the targets that serves at least twice its tok/s)."""
    ok = [d for d in rows if d.meets]
    if not ok:
        return None
    best = ok[0]
    scale = best.quality_benchmark or q.quality_scale
    parts = [f"best within {q.limits()} at {q.concurrency:,} users: {best.model} ({best.plan.label}), quality "
             f"{_q(best)} on {scale}, {_total(best):,.0f} tok/s"]
    copies = list(dict.fromkeys(d.model for d in ok[1:] if _same_model(d, best) and d.model != best.model))
    others = [d for d in ok[1:] if not _same_model(d, best)]
    if others:
        r = others[0]
        dq = (f" ({abs(best.quality - r.quality):g} {'lower' if r.quality <= best.quality else 'higher'})"
              if best.quality is not None and r.quality is not None and r.quality != best.quality
              else " (the same score)" if r.quality is not None and r.quality == best.quality else "")
        skip = (f" (passing over {', '.join(copies)}: the same model re-uploaded, scored as {best.quality_measured_on})"
                if copies else "")
        parts.append(f"runner-up{skip}: {r.model} ({r.plan.label}), quality {_q(r)}{dq}, {_total(r):,.0f} tok/s "
                     f"({_total(r) / _total(best):.2f}x the best's)")
    elif copies:
        parts.append(f"no other model within the targets ({', '.join(copies)}: the same model re-uploaded)")
    faster = [d for d in ok if _total(d) >= 2 * _total(best) and d.quality is not None]
    if best.quality is None:
        pass
    elif faster:
        f = faster[0]  # ok is in quality order: the first that doubles is the cheapest in quality
        gap = best.quality - f.quality
        blur = (" (within the two scores' published 95% intervals: not distinguishable)"
                if best.quality_ci95 and f.quality_ci95 and abs(gap) <= best.quality_ci95 + f.quality_ci95 else "")
        parts.append(f"2x the throughput ({_total(f):,.0f} tok/s) costs {gap:g} quality points{blur}: "
                     f"{f.model} ({_q(f)})")
    else:
        parts.append("no model within the targets serves 2x its throughput")
    return "; ".join(parts)
