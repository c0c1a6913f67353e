"""Each model's best plan for a query, and the ranking of models: one vectorised sweep over every model,
every runnable plan and the query's concurrency grid."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.cost.sweep import Case, Sweep, all_cases, evaluate, node_gpus
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.decide.command import Serving, serve_command
from advisor.decide.explain import compare, plan_constraints, unfit_reason, verdict, why
from advisor.decide.nodes import with_scale_out
from advisor.decide.query import Query
from advisor.decide.ranked import RankedPlan, Ranking, Unranked
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster
from advisor.quality.facts import Quality
from advisor.resolve import Resolved


def rank(resolved: list[Resolved], hw: HardwareProfile, settings: Settings, terms: Terms, q: Query,
         calibrated: dict[str, Any], gpus: int | None = None, all_plans: bool = False,
         quality: dict[str, Quality | None] | None = None, cluster: Cluster | None = None) -> Ranking:
    """Best plan per model (every runnable plan with `all_plans`): plans that meet the query first, by score;
    then (goodput) the ones that miss its limits, closest first. `cluster`: several nodes of `hw` (`--nodes`), each
    row then says what the extra nodes buy (`decide/nodes.py`)."""
    per_model = {r.arch.model: all_cases(r.arch, hw, settings, gpus, r.source, cluster) for r in resolved}
    runnable = [c for cases in per_model.values() for c in cases if c.runs]
    unfit = [Unranked(model=r.arch.model, source=r.source, reason=unfit_reason(per_model[r.arch.model], hw))
             for r in resolved if not any(c.runs for c in per_model[r.arch.model])]
    if not runnable:
        return Ranking(rows=(), unranked=tuple(unfit), sweep=None, query=q)
    grid = np.array(q.grid(), dtype=float)
    sweep = evaluate(runnable, terms, grid, np.array([q.input_len]), np.array([q.output_len]),
                     calibrated)
    s = _scores(sweep, grid, q)
    rows: list[RankedPlan] = []
    for name, cases in per_model.items():
        idx = [i for i, c in enumerate(runnable) if c.arch.model == name]
        order = sorted(idx, key=lambda i: (not s.meets[i], -s.score[i], s.miss[i], runnable[i].plan.gpus))
        for i in order if all_plans else order[:1]:
            row = _row(sweep, i, int(grid[s.col[i]]), cases, settings, q, s, float(s.score[i]))
            cap = _capacity(sweep, i, int(s.col[i]), q, settings, terms, node_gpus(hw, gpus, cluster))
            rows.append(row.model_copy(update={**cap,
                                               **_quality((quality or {}).get(name))}))
    rows = with_scale_out(rows, resolved, hw, settings, terms, q, cluster)
    rows.sort(key=lambda d: order_key(d, q))
    rows, dropped = _min_quality(rows, q)
    unfit += dropped
    if not rows:
        return Ranking(rows=(), unranked=tuple(unfit), sweep=sweep, query=q)
    ranked = tuple(r.model_copy(update={"rank": n}) for n, r in enumerate(rows, 1))
    return Ranking(rows=ranked, unranked=tuple(unfit), sweep=sweep, query=q, verdict=verdict(ranked, q),
                   comparison=_comparison(ranked, q))


@dataclass(frozen=True)
class Scores:
    """Per case: the score, the concurrency column it is reported at, whether it meets the query's limits, and
    by how much the closest point misses them (max of TPOT/limit, TTFT/limit; 0 when it meets)."""

    score: np.ndarray
    col: np.ndarray
    meets: np.ndarray
    miss: np.ndarray


def _scores(sweep: Sweep, grid: np.ndarray, q: Query) -> Scores:
    o = sweep.out
    n = o["tpot_s"].shape[0]
    if q.objective == "best-under-slo":  # at the asked load: meets the targets there, then the most tok/s
        c = int(np.searchsorted(grid, q.concurrency))
        tp = o["tpot_s"][:, c, 0] * 1e3 / q.max_tpot_ms if q.max_tpot_ms is not None else np.zeros(n)
        tt = o["ttft_s"][:, c, 0] * 1e3 / q.max_ttft_ms if q.max_ttft_ms is not None else np.zeros(n)
        over = np.maximum(tp, tt)
        return Scores(o["output_tok_s"][:, c, 0], np.full(n, c), over <= 1, np.where(over <= 1, 0.0, over))
    if q.objective in ("latency", "throughput"):
        c = int(np.searchsorted(grid, 1 if q.objective == "latency" else q.concurrency))
        key = "per_user_tok_s" if q.objective == "latency" else "output_tok_s"
        return Scores(o[key][:, c, 0], np.full(n, c), np.ones(n, bool), np.zeros(n))
    over = np.zeros_like(o["tpot_s"][:, :, 0])  # how far each point is beyond the limits (<= 1: within)
    if q.max_tpot_ms is not None:
        over = np.maximum(over, o["tpot_s"][:, :, 0] * 1e3 / q.max_tpot_ms)
    if q.max_ttft_ms is not None:
        over = np.maximum(over, o["ttft_s"][:, :, 0] * 1e3 / q.max_ttft_ms)
    over = np.where(grid[None, :] <= q.concurrency, over, np.inf)
    ok = over <= 1
    good = np.where(ok, o["output_tok_s"][:, :, 0], 0.0)
    meets = np.asarray(ok.any(axis=1))
    col = np.where(meets, good.argmax(axis=1), over.argmin(axis=1))
    miss = np.where(meets, 0.0, over.min(axis=1))
    return Scores(good.max(axis=1), col, meets, miss)


def _only_experts_converted(case: Case, settings: Settings) -> bool:
    """Whether --weight-dtype changes the routed experts' format and no other group's (what SGLang's
    nvfp4_online does)."""
    before = {w.name: w.fmt for w in case.arch.weights}
    changed = {w.name for w in case.weights if before.get(w.name) != w.fmt}
    return settings.weight_dtype is not None and changed <= {"routed_experts"}


def _row(sweep: Sweep, i: int, concurrency: int, cases: list[Case], settings: Settings, q: Query, s: Scores,
         score: float) -> RankedPlan:
    case = sweep.cases[i]
    pred = sweep.at(i, concurrency)
    serving = Serving(model=case.arch.model, plan=case.plan, checkpoint_dtype=case.arch.weight_dtype,
                      remote_code=case.arch.remote_code, moe=case.arch.moe is not None,
                      moe_only_groups=_only_experts_converted(case, settings), spec_tokens=pred.spec_tokens)
    cmd = serve_command(serving, sweep.hw, case.args, case.cluster)
    meets = bool(s.meets[i])
    return RankedPlan(**dict(pred), rank=0, score=score, objective=q.objective, meets=meets,
                      miss=float(s.miss[i]), constraints=plan_constraints(case, cases, sweep.hw), command=cmd.command,
                      commands=[launch.doc() for launch in cmd.launches],
                      command_notes=list(cmd.notes), why=why(pred, case, None if meets else q))


def _capacity(sweep: Sweep, i: int, col: int, q: Query, settings: Settings, terms: Terms, node: int
              ) -> dict[str, Any]:
    """Users at the SLO (when limits are asked), $ and kWh per million output tokens and replicas, at the
    operating point: the row's scored workload (grid column `col`), or (latency objective with limits) the most
    users within them."""
    from advisor.decide.capacity import kwh_per_mtok, replicas, slo_capacity, usd_per_mtok

    case = sweep.cases[i]
    out: dict[str, Any] = {}
    tok_s: float | None = None
    if q.max_tpot_ms is not None or q.max_ttft_ms is not None:
        cap = slo_capacity(sweep, i, q, case, terms)
        out.update(max_users_at_slo=cap.users, output_tok_s_at_slo=cap.output_tok_s, binding_limit=cap.binding)
        if q.objective == "latency":  # no load asked: the operating point is the most users within the targets
            tok_s = cap.output_tok_s
    if tok_s is None:  # the scored point: --concurrency (throughput), the best within the limits (goodput)
        tok_s = float(sweep.out["output_tok_s"][i, col, 0])
    gpus = case.plan.gpus
    n = replicas(gpus, node)
    if q.gpu_hour_price is not None:
        out.update(gpu_hour_price=q.gpu_hour_price, usd_per_mtok=usd_per_mtok(tok_s, gpus, q.gpu_hour_price))
    out.update(kwh_per_mtok=kwh_per_mtok(tok_s, gpus, sweep.hw.gpu.power_w), replicas=n,
               node_output_tok_s=n * tok_s if tok_s > 0 else None)
    return out


def joint(rankings: list[Ranking]) -> Ranking:
    """(model, box, plan) ranked together across boxes: every box's rows by the same rule as one box's, with
    $/Mtok deciding ties of meeting the limits when a price is given (cheaper first). The sweep and the
    comparison are the first box's; a model that runs on no box is listed once."""
    q = rankings[0].query
    rows = [r for rk in rankings for r in rk.rows]
    if all(r.usd_per_mtok is not None for r in rows) and q.objective != "latency":
        rows.sort(key=lambda d: (not d.meets, d.usd_per_mtok if d.usd_per_mtok is not None else np.inf, -d.score))
    else:
        rows.sort(key=lambda d: order_key(d, q))
    ranked = tuple(r.model_copy(update={"rank": n}) for n, r in enumerate(rows, 1))
    ranked_models = {r.model for r in ranked}
    unranked = {u.model: u for rk in rankings for u in rk.unranked if u.model not in ranked_models}
    return Ranking(rows=ranked, unranked=tuple(unranked.values()), sweep=rankings[0].sweep, query=q,
                   verdict=verdict(ranked, q), comparison=_comparison(ranked, q) if ranked else None)


def order_key(d: RankedPlan, q: Query) -> tuple[Any, ...]:
    """Rows that meet the query first; best-under-slo: by quality (unknown after known), then score; else by
    score, then how close a miss is."""
    if q.objective == "best-under-slo":
        return (not d.meets, d.quality is None, -(d.quality or 0.0), -d.score)
    return (not d.meets, -d.score, d.miss)


def _quality(qual: Quality | None) -> dict[str, Any]:
    if qual is None:
        return {}
    return {"quality": qual.score, "quality_benchmark": qual.benchmark, "quality_ci95": qual.ci95,
            "quality_source": qual.source, "quality_measured_on": qual.measured_on, "quality_note": qual.note or None}


def _min_quality(rows: list[RankedPlan], q: Query) -> tuple[list[RankedPlan], list[Unranked]]:
    """--min-quality: rows below it, or with no score on the scale, leave the ranking with the reason."""
    if q.min_quality is None:
        return rows, []
    keep: list[RankedPlan] = []
    out: list[Unranked] = []
    for d in rows:
        if d.quality is not None and d.quality >= q.min_quality:
            keep.append(d)
        elif not any(u.model == d.model for u in out):
            why = (f"quality unknown on {q.quality_scale}: --min-quality {q.min_quality:g} cannot be checked"
                   if d.quality is None else f"quality {d.quality:g} on {q.quality_scale} is below --min-quality "
                                             f"{q.min_quality:g}")
            out.append(Unranked(model=d.model, fits=True, reason=why))
    return keep, out


def _comparison(ranked: tuple[RankedPlan, ...], q: Query) -> str | None:
    if q.objective != "best-under-slo":
        return compare(ranked[0], ranked[1], q) if len(ranked) > 1 else None
    from advisor.decide.explain import quality_tradeoff

    return quality_tradeoff(ranked, q)


def best_of(plain: Ranking, speculative: Ranking) -> Ranking:
    """--speculative auto: per model, the row with speculation where it ranks better than without (by the
    query's own order), else the plain row; the models are then ranked again."""
    q = plain.query
    spec = {d.model: d for d in speculative.rows}
    rows = [spec[d.model] if d.model in spec and spec[d.model].spec_tokens and
            order_key(spec[d.model], q) < order_key(d, q) else d for d in plain.rows]
    rows.sort(key=lambda d: order_key(d, q))
    ranked = tuple(r.model_copy(update={"rank": n}) for n, r in enumerate(rows, 1))
    return Ranking(rows=ranked, unranked=plain.unranked, sweep=plain.sweep, query=q, verdict=verdict(ranked, q),
                   comparison=_comparison(ranked, q) if ranked else None)
