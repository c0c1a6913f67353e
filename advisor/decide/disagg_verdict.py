"""The two answers side by side (best disaggregated deployment, best aggregated plan) and the verdict with its
computed reason: what the KV transfer costs, what prefill interference disaggregation removes, and what each
pool's GPUs give per GPU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from advisor.arch.model import ModelArch
from advisor.cost.disagg import make_disagg
from advisor.cost.disagg_predict import PREDICT_POINTS, DisaggPrediction, combos_of, predict_disagg
from advisor.cost.disagg_serving import decode_side, envelope, prefill_side, solve
from advisor.cost.disagg_transfer import KvLink
from advisor.cost.plan import Plan
from advisor.cost.sweep import Case, evaluate
from advisor.cost.terms import Terms
from advisor.decide.capacity import slo_capacity
from advisor.decide.query import Query
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster

if TYPE_CHECKING:
    from advisor.cost.disagg_serving import Combos
    from advisor.decide.disagg_sides import Sides

AGG_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
REFINE = 5  # aggregated plans whose users at the targets are resolved exactly (the best by the grid)


class DisaggQuery(BaseModel):
    """The question: lengths, latency targets, and at most how many users one deployment serves."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_len: int = Field(1024, ge=1)
    output_len: int = Field(1024, ge=2)
    max_tpot_ms: float | None = Field(None, gt=0)
    max_ttft_ms: float | None = Field(None, gt=0)
    max_users: float = Field(float("inf"), gt=0)

    def limits(self) -> str:
        parts = [f"{n} <= {v:g} ms" for n, v in (("TPOT", self.max_tpot_ms), ("TTFT", self.max_ttft_ms))
                 if v is not None]
        return " and ".join(parts) or "no latency target"


class AggChoice(BaseModel):
    """The best aggregated plan on the budget: replicas of one plan, each at `users` users."""

    model_config = ConfigDict(frozen=True)

    plan: str
    parallel: Plan
    gpus: int
    replicas: int
    users: int
    ttft_ms: float
    tpot_ms: float
    prefill_interference_ms: float  # of TPOT: other requests' prefill chunks in the decode steps
    output_tok_s: float  # one replica
    total_tok_s: float  # every replica on the budget
    tok_s_per_gpu: float
    meets: bool


class DisaggChoice(BaseModel):
    """The best disaggregated deployment on the budget: replicas of one unit, each at `prediction.concurrency`."""

    model_config = ConfigDict(frozen=True)

    prediction: DisaggPrediction
    prefill_parallel: Plan  # each prefill worker's plan
    decode_parallel: Plan
    replicas: int
    total_tok_s: float
    tok_s_per_gpu: float
    prefill_tok_s_per_gpu: float  # prompt tokens per second the prefill pool processes, per prefill GPU
    decode_tok_s_per_gpu: float  # output tokens per second per decode GPU
    meets: bool


class DisaggVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    hardware: str
    budget: int
    query: DisaggQuery
    disaggregated: DisaggChoice | None
    aggregated: AggChoice | None
    winner: Literal["disaggregated", "aggregated", "neither"]
    reason: list[str]


def _query(q: DisaggQuery) -> Query:
    return Query(objective="goodput", input_len=q.input_len, output_len=q.output_len, max_tpot_ms=q.max_tpot_ms,
                 max_ttft_ms=q.max_ttft_ms)


def best_aggregated(cases: list[Case], terms: Terms, q: DisaggQuery, budget: int) -> AggChoice | None:
    """Replicas of the aggregated plan (of the runnable `cases`) that serve the most output tok/s within the targets
    on the budget (every user running, none queued), users resolved exactly (`decide/capacity.py: slo_capacity`)."""
    if not cases:
        return None
    grid = np.array([g for g in AGG_GRID if g <= q.max_users] or [1], float)
    sw = evaluate(cases, terms, grid, np.array([q.input_len]), np.array([q.output_len]))
    o = sw.out
    lim_t = q.max_tpot_ms * 1e-3 if q.max_tpot_ms is not None else np.inf
    lim_f = q.max_ttft_ms * 1e-3 if q.max_ttft_ms is not None else np.inf
    miss = np.maximum(o["tpot_s"][:, :, 0] / lim_t, o["ttft_s"][:, :, 0] / lim_f)
    miss = np.where(o["running"][:, :, 0] >= grid[None, :], miss, np.inf)
    reps = np.array([budget // c.plan.gpus for c in cases])
    total = np.where(miss <= 1, o["output_tok_s"][:, :, 0], 0.0).max(axis=1) * reps
    order = np.argsort(-(total + 1e-9 * total / np.array([c.plan.gpus for c in cases])))[:REFINE]
    picks = []
    for i in order:
        users, tok = int(grid[int(np.argmin(miss[i]))]), 0.0
        if total[i] > 0 and (q.max_tpot_ms is not None or q.max_ttft_ms is not None):
            cap = slo_capacity(sw, int(i), _query(q), cases[i], terms)
            users, tok = int(min(cap.users, q.max_users)) or 1, cap.output_tok_s
        elif total[i] > 0:
            users = int(grid[int(np.argmax(np.where(miss[i] <= 1, o["output_tok_s"][i, :, 0], 0)))])
        picks.append((tok * reps[i], int(i), users))
    _, i, users = max(picks, key=lambda t: (t[0], -cases[t[1]].plan.gpus))
    pred = evaluate([cases[i]], terms, np.array([float(users)]), np.array([q.input_len]),
                    np.array([q.output_len])).at(0, users)
    tok = pred.output_tok_s or 0.0
    meets = (pred.tpot_ms or np.inf) <= lim_t * 1e3 and (pred.ttft_ms or np.inf) <= lim_f * 1e3
    n = int(reps[i])
    return AggChoice(plan=cases[i].plan.label(), parallel=cases[i].plan, gpus=cases[i].plan.gpus, replicas=n,
                     users=users,
                     ttft_ms=pred.ttft_ms or 0.0, tpot_ms=pred.tpot_ms or 0.0,
                     prefill_interference_ms=pred.prefill_interference_ms or 0.0, output_tok_s=tok,
                     total_tok_s=tok * n, tok_s_per_gpu=tok / cases[i].plan.gpus, meets=bool(meets))


def disagg_choice(arch: ModelArch, s: Sides, m: Combos, k: int, q: DisaggQuery, budget: int,
                  cl: Cluster, link: KvLink | None) -> DisaggChoice:
    """Combo k of the search, resolved on a fine batch grid: the most users within the targets, predicted there."""
    pc, dc = s.pre_cases[int(m.ip[k])], s.dec_cases[int(m.id[k])]
    x, y = int(m.x[k]), int(m.y[k])
    plan = make_disagg(arch, pc.hw, pc.plan, x, dc.plan, y, s.settings, s.decode_settings, cluster=cl,
                       budget=budget, link=link, cases=(pc, dc))
    pre = prefill_side([pc], s.terms, q.input_len)
    dec = decode_side([dc], s.terms, q.input_len, q.output_len, PREDICT_POINTS)
    sol = solve(pre, dec, combos_of([plan], q.input_len, [0], [0]), plan.engine)
    lim_t = q.max_tpot_ms * 1e-3 if q.max_tpot_ms is not None else np.inf
    lim_f = q.max_ttft_ms * 1e-3 if q.max_ttft_ms is not None else np.inf
    ok = envelope(sol)[0] & (sol["tpot"][0] <= lim_t) & (sol["ttft"][0] <= lim_f) & (sol["users"][0] <= q.max_users)
    users = int(np.floor(sol["users"][0, np.flatnonzero(ok)[-1]])) if ok.any() else 1
    pred = predict_disagg(plan, s.terms, max(users, 1), q.input_len, q.output_len)
    tok = pred.output_tok_s or 0.0
    reps = budget // plan.gpus
    tol = 1 + 1e-6
    meets = (pred.tpot_ms or np.inf) <= lim_t * 1e3 * tol and (pred.ttft_ms or np.inf) <= lim_f * 1e3 * tol
    return DisaggChoice(prediction=pred, prefill_parallel=pc.plan, decode_parallel=dc.plan, replicas=reps,
                        total_tok_s=tok * reps, tok_s_per_gpu=tok / plan.gpus,
                        prefill_tok_s_per_gpu=(pred.requests_per_s or 0.0) * q.input_len / plan.prefill.gpus,
                        decode_tok_s_per_gpu=tok / plan.decode.gpus, meets=bool(meets and ok.any()))


def verdict(arch: ModelArch, hw: HardwareProfile, q: DisaggQuery, budget: int, d: DisaggChoice | None,
            a: AggChoice | None, why_none: str | None = None) -> DisaggVerdict:
    """Which serves more output tok/s on the budget within the targets, and why (module docstring)."""
    d_ok, a_ok = bool(d and d.meets), bool(a and a.meets)
    if d_ok and a_ok:
        assert d is not None and a is not None
        winner = "disaggregated" if d.total_tok_s > a.total_tok_s else "aggregated"
    else:
        winner = "disaggregated" if d_ok else "aggregated" if a_ok else "neither"
    reason = [_headline(winner, d, a, q, budget)]
    if d is not None:
        reason += _disagg_reasons(d, a, q)
    elif why_none:
        reason.append(why_none)
    return DisaggVerdict(model=arch.model, hardware=hw.id, budget=budget, query=q, disaggregated=d, aggregated=a,
                         winner=winner, reason=reason)


def _headline(winner: str, d: DisaggChoice | None, a: AggChoice | None, q: DisaggQuery, budget: int) -> str:
    lim = q.limits()
    if winner == "neither":
        return f"neither meets {lim} on {budget} GPUs"
    win, lose = (d, a) if winner == "disaggregated" else (a, d)
    assert win is not None
    other = "aggregated" if winner == "disaggregated" else "disaggregated"
    if lose is None:
        return f"{winner} wins: {win.total_tok_s:,.0f} output tok/s on {budget} GPUs within {lim}; no {other} " \
               f"deployment fits {budget} GPUs"
    if not lose.meets:
        return f"{winner} wins: {win.total_tok_s:,.0f} output tok/s on {budget} GPUs within {lim}; {other} " \
               "serving meets it with no deployment on this budget"
    ratio = win.total_tok_s / max(lose.total_tok_s, 1e-9)
    return (f"{winner} wins: {win.total_tok_s:,.0f} against {lose.total_tok_s:,.0f} output tok/s on {budget} GPUs "
            f"within {lim} ({ratio:.2f}x)")


OVERLAP_WORDS = {"vllm": "the decode worker pulls it once the prefill is done (NixlConnector)",
                 "sglang": "each prefill chunk is sent as the next one computes",
                 "trtllm": "the cache transceiver sends it once the context phase is done"}


def transfer_line(p: DisaggPrediction) -> str:
    """What the KV transfer costs: bytes on each side, the link, its time alone and its share of TTFT."""
    parts = p.ttft_parts_ms or {}
    return (f"transfer: one {p.input_len:,}-token prompt's KV is {p.kv_recv_mb or 0:,.0f} MB on each decode GPU "
            f"({p.kv_send_mb or 0:,.0f} MB from the busiest prefill GPU); over {p.link} it takes "
            f"{p.transfer_alone_ms or 0:.1f} ms, {parts.get('transfer', 0):.1f} ms of the {p.ttft_ms or 0:,.0f} ms "
            f"TTFT ({OVERLAP_WORDS[p.engine]}; link {p.link_utilisation or 0:.0%} busy)")


def _disagg_reasons(d: DisaggChoice, a: AggChoice | None, q: DisaggQuery) -> list[str]:
    p = d.prediction
    out = [transfer_line(p)]
    dtp = f"{p.tpot_ms or 0:.1f} ms TPOT at {p.decode_batch_per_rank or 0:.1f} requests per decode rank"
    if a is not None:
        out.append(f"interference: aggregated {a.plan} at {a.users:,} users spends {a.prefill_interference_ms:.1f} ms "
                   f"of its {a.tpot_ms:.1f} ms TPOT on other requests' prefill chunks; the decode pool's steps carry "
                   f"none ({dtp})")
    else:
        out.append(f"interference: none in the decode pool ({dtp})")
    out.append(f"per GPU: prefill {p.prefill.workers} x {p.prefill.plan} ({p.prefill.gpus} GPUs) at "
               f"{p.prefill_utilisation or 0:.0%} of its token budget, {d.prefill_tok_s_per_gpu:,.0f} prompt tok/s per "
               f"GPU; decode {p.decode.workers} x {p.decode.plan} ({p.decode.gpus} GPUs), "
               f"{d.decode_tok_s_per_gpu:,.0f} output tok/s per GPU; {d.tok_s_per_gpu:,.0f} per GPU overall"
               + (f" against {a.tok_s_per_gpu:,.0f} aggregated ({a.plan})" if a is not None else ""))
    if (line := limit_line(p)) is not None:
        out.append(line)
    return out


def limit_line(p: DisaggPrediction) -> str | None:
    """Which side limits the deployment, from the requests/s each side sustains alone."""
    cap = p.capacity_requests_per_s
    if not cap:
        return None
    return (f"limit: the {p.bottleneck} side (requests/s each side sustains: prefill {cap['prefill']:.2f}, "
            f"decode {cap['decode']:.2f}, link {cap['link']:.2f}; served {p.requests_per_s or 0:.2f} at "
            f"{p.concurrency:,} users)")
