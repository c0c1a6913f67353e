"""Each model's best deployment for a query, and the ranking of models: one vectorised sweep over every model,
every runnable plan and every load the query's grid of total users puts on one replica (`decide/replicas.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.cost.prediction import Prediction
from advisor.cost.sweep import Case, Sweep, all_cases, evaluate, make_case, node_gpus
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.decide.capacity import replicas
from advisor.decide.command import Serving, serve_command
from advisor.decide.explain import compare, not_kept, plan_constraints, speculation_note, unfit_reason, verdict, why
from advisor.decide.nodes import with_scale_out
from advisor.decide.query import Query
from advisor.decide.ranked import RankedPlan, Ranking, Unranked
from advisor.decide.replicas import Deployment, Deployments, deployment, deployments, on_grid, replica_grid
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster
from advisor.quality.facts import Quality
from advisor.resolve import Resolved


def rank(resolved: list[Resolved], hw: HardwareProfile, settings: Settings, terms: Terms, q: Query,
         calibrated: dict[str, Any], gpus: int | None = None, all_plans: bool = False,
         quality: dict[str, Quality | None] | None = None, cluster: Cluster | None = None) -> Ranking:
    """Best deployment per model (every runnable plan with `all_plans`): plans that meet the query first, by score;
    then (goodput) the ones that miss its limits, closest first. A plan on fewer GPUs than the budget is ranked as
    its replicas serving the users together (`decide/replicas.py`). `cluster`: several nodes of `hw` (`--nodes`),
    each row then says what the extra nodes buy (`decide/nodes.py`)."""
    per_model = {r.arch.model: all_cases(r.arch, hw, settings, gpus, r.source, cluster) for r in resolved}
    runnable = [c for cases in per_model.values() for c in cases if c.runs]
    unfit = [Unranked(model=r.arch.model, source=r.source, reason=unfit_reason(per_model[r.arch.model], hw))
             for r in resolved if not any(c.runs for c in per_model[r.arch.model])]
    if not runnable:
        return Ranking(rows=(), unranked=tuple(unfit), sweep=None, query=q)
    budget = node_gpus(hw, gpus, cluster)
    reps = np.array([replicas(c.plan.gpus, budget) for c in runnable])
    sweep = evaluate(runnable, terms, replica_grid(q.grid(), reps), np.array([q.input_len]),
                     np.array([q.output_len]), calibrated)
    dep = deployments(sweep, reps, np.array(q.grid()))
    s = _scores(dep, q)
    ctx = _Context(sweep, dep, s, settings, q, terms, gpus, budget)
    rows: list[RankedPlan] = []
    for name, cases in per_model.items():
        idx = [i for i, c in enumerate(runnable) if c.arch.model == name]
        order = sorted(idx, key=lambda i: (not s.meets[i], -s.score[i], s.miss[i], runnable[i].plan.gpus))
        for i in order if all_plans else order[:1]:
            rows.append(_row(ctx, i, cases).model_copy(update=_quality((quality or {}).get(name))))
    rows = with_scale_out(rows, resolved, hw, settings, terms, q, cluster)
    rows.sort(key=lambda d: order_key(d, q))
    rows, dropped = _min_quality(rows, q)
    unfit += dropped
    shown = on_grid(sweep, q.grid())
    if not rows:
        return Ranking(rows=(), unranked=tuple(unfit), sweep=shown, query=q)
    ranked = tuple(r.model_copy(update={"rank": n}) for n, r in enumerate(rows, 1))
    return Ranking(rows=ranked, unranked=tuple(unfit), sweep=shown, query=q, verdict=verdict(ranked, q),
                   comparison=_comparison(ranked, q))


@dataclass(frozen=True)
class Scores:
    """Per case: the score, the column of the total-users grid it is reported at, whether it meets the query's
    limits, and by how much the closest point misses them (max of TPOT/limit, TTFT/limit; 0 when it meets)."""

    score: np.ndarray
    col: np.ndarray
    meets: np.ndarray
    miss: np.ndarray


@dataclass(frozen=True)
class _Context:
    """What every row of one ranking is built from: the per-replica sweep, the deployments, the scores, the
    query and the engine settings, --gpus and the GPU budget."""

    sweep: Sweep
    dep: Deployments
    s: Scores
    settings: Settings
    q: Query
    terms: Terms
    gpus: int | None
    budget: int


def _over(d: Deployments, q: Query) -> np.ndarray:
    """How far each deployment point is beyond the query's limits, by its busiest replica (<= 1: within)."""
    over = np.zeros_like(d.tpot_s)
    if q.max_tpot_ms is not None:
        over = np.maximum(over, d.tpot_s * 1e3 / q.max_tpot_ms)
    if q.max_ttft_ms is not None:
        over = np.maximum(over, d.ttft_s * 1e3 / q.max_ttft_ms)
    return over


def _scores(d: Deployments, q: Query) -> Scores:
    """Each deployment's score: latency, the busiest replica's per-user tok/s at one user; throughput, the total
    tok/s at --concurrency users; best-under-slo, the same, meeting the targets there; goodput, the most total tok/s
    at a load up to --concurrency whose busiest replica is within the limits."""
    grid = d.users
    n = len(d.replicas)
    over = _over(d, q)
    if q.objective in ("latency", "throughput", "best-under-slo"):
        c = int(np.searchsorted(grid, 1 if q.objective == "latency" else q.concurrency))
        score = d.per_user_tok_s[:, c] if q.objective == "latency" else d.output_tok_s[:, c]
        if q.objective != "best-under-slo":
            return Scores(score, np.full(n, c), np.ones(n, bool), np.zeros(n))
        return Scores(score, np.full(n, c), over[:, c] <= 1, np.where(over[:, c] <= 1, 0.0, over[:, c]))
    over = np.where(grid[None, :] <= q.concurrency, over, np.inf)
    ok = over <= 1
    good = np.where(ok, d.output_tok_s, 0.0)
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


def _row(ctx: _Context, i: int, cases: list[Case]) -> RankedPlan:
    """Case i's row: the busiest replica's prediction at the scored load, the deployment, why, its commands and
    its capacity."""
    sweep, q, s = ctx.sweep, ctx.q, ctx.s
    case, col = sweep.cases[i], int(s.col[i])
    pred = sweep.at(i, int(ctx.dep.busiest[i, col]))
    dep = deployment(ctx.dep, i, col, case.plan.gpus)
    serving = Serving(model=case.arch.model, plan=case.plan, checkpoint_dtype=case.arch.weight_dtype,
                      remote_code=case.arch.remote_code, moe=case.arch.moe is not None,
                      moe_only_groups=_only_experts_converted(case, ctx.settings), spec_tokens=pred.spec_tokens)
    cmd = serve_command(serving, sweep.hw, case.args, case.cluster, replicas=dep.replicas, budget=ctx.budget)
    meets = bool(s.meets[i])
    missed = None if meets else q
    return RankedPlan(**dict(pred), rank=0, score=float(s.score[i]), objective=q.objective, meets=meets,
                      miss=float(s.miss[i]), constraints=plan_constraints(case, cases, sweep.hw), command=cmd.command,
                      commands=[launch.doc() for launch in cmd.launches], command_notes=list(cmd.notes),
                      why=why(pred, case, missed, dep), deployment=dep,
                      speculation=speculation_note(pred, case, ctx.settings, _plain_tpot(ctx, case, pred)),
                      **_capacity(ctx, i, dep))


def _plain_tpot(ctx: _Context, case: Case, pred: Prediction) -> float | None:
    """TPOT of the same plan at the same load without MTP speculation (None when the row does not speculate)."""
    if not pred.spec_tokens:
        return None
    plain = make_case(case.arch, case.plan, ctx.sweep.hw, ctx.settings.model_copy(update={"speculative": False}),
                      ctx.gpus, case.source, case.cluster)
    if not plain.runs:
        return None
    users = np.array([float(pred.workload.concurrency)])
    one = evaluate([plain], ctx.terms, users, np.array([ctx.q.input_len]), np.array([ctx.q.output_len]))
    return float(one.out["tpot_s"][0, 0, 0]) * 1e3


def _capacity(ctx: _Context, i: int, dep: Deployment) -> dict[str, Any]:
    """Users at the SLO (when limits are asked: one replica's), $ and kWh per million output tokens and the
    deployment's tok/s at the operating point: the row's scored load, or (latency objective) one user on each
    replica, or with limits the most users within them on each."""
    from advisor.decide.capacity import kwh_per_mtok, slo_capacity, usd_per_mtok

    sweep, q = ctx.sweep, ctx.q
    case = sweep.cases[i]
    out: dict[str, Any] = {}
    per_replica: float | None = None
    if q.max_tpot_ms is not None or q.max_ttft_ms is not None:
        cap = slo_capacity(sweep, i, q, case, ctx.terms)
        out.update(max_users_at_slo=cap.users, output_tok_s_at_slo=cap.output_tok_s, binding_limit=cap.binding)
        if q.objective == "latency":  # no load asked: the operating point is the most users within the targets
            per_replica = cap.output_tok_s
    if q.objective == "latency":  # one user (or the users within the targets) on every replica
        one = per_replica if per_replica is not None else float(sweep.out["output_tok_s"][i, sweep.column(1), 0])
        tok_s = dep.replicas * one
    else:  # the scored load: --concurrency users (throughput), the best within the limits (goodput)
        tok_s = dep.output_tok_s
    if q.gpu_hour_price is not None:
        out.update(gpu_hour_price=q.gpu_hour_price, usd_per_mtok=usd_per_mtok(tok_s, dep.gpus, q.gpu_hour_price))
    out.update(kwh_per_mtok=kwh_per_mtok(tok_s, dep.gpus, sweep.hw.gpu.power_w), replicas=dep.replicas,
               node_output_tok_s=tok_s if tok_s > 0 else None)
    return out


def joint(rankings: list[Ranking]) -> Ranking:
    """(model, box, plan) ranked together across boxes: every box's rows by the same rule as one box's, or, when
    every row has a price, by $/Mtok (cheaper first, rows that meet the limits before the others; the title and
    the comparison then say so). The sweep is the first box's; a model that runs on no box is listed once."""
    from advisor.decide.explain import compare_cost

    q = rankings[0].query
    rows = [r for rk in rankings for r in rk.rows]
    by_cost = all(r.usd_per_mtok is not None for r in rows) and q.objective != "latency"
    if by_cost:
        rows.sort(key=lambda d: (not d.meets, d.usd_per_mtok if d.usd_per_mtok is not None else np.inf, -d.score))
    else:
        rows.sort(key=lambda d: order_key(d, q))
    ranked = tuple(r.model_copy(update={"rank": n}) for n, r in enumerate(rows, 1))
    ranked_models = {r.model for r in ranked}
    unranked = {u.model: u for rk in rankings for u in rk.unranked if u.model not in ranked_models}
    if by_cost:
        load = f"up to {q.concurrency:,} users" if q.objective == "goodput" else f"{q.concurrency:,} users"
        within = f"; those within {q.limits()} first" if q.limits() else ""
        order = f"$ per million output tokens at {load}, each box at its GPU-hour price (cheapest first{within})"
        comparison = compare_cost(ranked[0], ranked[1], q) if len(ranked) > 1 else None
    else:
        order, comparison = None, _comparison(ranked, q) if ranked else None
    return Ranking(rows=ranked, unranked=tuple(unranked.values()), sweep=rankings[0].sweep, query=q,
                   verdict=verdict(ranked, q), comparison=comparison, order=order)


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


def best_of(plain: Ranking, speculative: Ranking, speculation: bool = True) -> Ranking:
    """--speculative auto: per model, the row with speculation where it ranks better than without (by the
    query's own order), else the plain row, which then says why MTP was not kept; the models are then ranked
    again. `speculation` False (--moe-a2a auto): the better of the two rows per model, as they are."""
    q = plain.query
    spec = {d.model: d for d in speculative.rows}
    rows = []
    for d in plain.rows:
        sp = spec.get(d.model)
        if sp is not None and (sp.spec_tokens or not speculation) and order_key(sp, q) < order_key(d, q):
            rows.append(sp)
        elif sp is not None and speculation:
            rows.append(d.model_copy(update={"speculation": not_kept(sp, d, q)}))
        else:
            rows.append(d)
    rows.sort(key=lambda d: order_key(d, q))
    ranked = tuple(r.model_copy(update={"rank": n}) for n, r in enumerate(rows, 1))
    return Ranking(rows=ranked, unranked=plain.unranked, sweep=plain.sweep, query=q, verdict=verdict(ranked, q),
                   comparison=_comparison(ranked, q) if ranked else None)
