"""Disaggregate or not: for a model, a GPU budget (one box or a cluster) and TTFT/TPOT targets, the best
disaggregated deployment (prefill plan, x workers, decode plan, y workers) and the best aggregated plan side by
side, with the verdict and its computed reason (`decide/disagg_verdict.py`).

The search is vectorised: each side's plans are evaluated once (`cost/disagg_serving.py`: a prefill plan's step at
one chunk and at its budget, a decode plan's step over a grid of batches), the plans are pruned to the few best per
GPU count on each side (prefill: capacity per GPU, and the fastest single prompt; decode: output tok/s per GPU within
the TPOT target, and the lowest TPOT), and every pairing and coprime ratio x:y that fits the budget is solved at
once with numpy (a deployment of x:y = 2:4 is two of 1:2; a unit smaller than the budget is replicated).
"""

from __future__ import annotations

import dataclasses
from math import gcd
from typing import TypeVar

import numpy as np

from advisor.arch.model import ModelArch
from advisor.cost.disagg import hetero_reason
from advisor.cost.disagg_serving import Combos, DecodeSide, PrefillSide, decode_side, envelope, prefill_side, solve
from advisor.cost.disagg_transfer import KvLink, PoolLink, pool_link, replicated
from advisor.cost.memory import kv_elem_bytes
from advisor.cost.sweep import Case, all_cases, node_gpus
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.decide.disagg_sides import Sides
from advisor.decide.disagg_verdict import (
    DisaggChoice,
    DisaggQuery,
    DisaggVerdict,
    best_aggregated,
    disagg_choice,
    verdict,
)
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster

S = TypeVar("S", PrefillSide, DecodeSide)
KEEP_PER_SIZE = 3  # plans kept per GPU count on each side, by its own measure of merit
MAX_WORKERS = 16  # workers of one side in one deployment unit (larger counts are replicas of a smaller ratio)
CHUNK = 20_000  # combos solved per numpy pass (bounds memory: CHUNK x decode points x ~20 arrays)
REFINE = 5  # the best combos by the coarse grid, each resolved on the fine one (the grid's choice can be off)


def _coprime_ratios(limit: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(x, y) for x in range(1, limit + 1) for y in range(1, limit + 1) if gcd(x, y) == 1]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def _keep(sizes: np.ndarray, merit: list[np.ndarray]) -> np.ndarray:
    """Positions of the plans to keep: per GPU count, the best `KEEP_PER_SIZE` by the first measure and the best
    one by each other (higher is better)."""
    keep: set[int] = set()
    for n in np.unique(sizes):
        rows = np.flatnonzero(sizes == n)
        for k, m in enumerate(merit):
            order = rows[np.argsort(-m[rows], kind="stable")]
            keep.update(order[:KEEP_PER_SIZE if k == 0 else 1].tolist())
    return np.array(sorted(keep), dtype=int)


def runnable(arch: ModelArch, hw: HardwareProfile, settings: Settings, cluster: Cluster, budget: int) -> list[Case]:
    """Every plan of `arch` that runs on at most `budget` GPUs of the cluster (`cost/sweep.py: all_cases`)."""
    cases = all_cases(arch, hw, settings, cluster=cluster if cluster.multi_node else None)
    return [c for c in cases if c.runs and c.plan.gpus <= budget]


def sides(pre_all: list[Case], dec_all: list[Case], settings: Settings, decode_settings: Settings, terms: Terms,
          q: DisaggQuery, budget: int) -> Sides:
    """The worker plans of each side that leave room for the other, evaluated and pruned (module docstring)."""
    pre_all = [c for c in pre_all if c.plan.gpus < budget]
    dec_all = [c for c in dec_all if c.plan.gpus < budget]
    if not pre_all or not dec_all:
        return Sides(settings, decode_settings, terms, [], [], None, None)
    pre = prefill_side(pre_all, terms, q.input_len)
    dec = decode_side(dec_all, terms, q.input_len, q.output_len)
    p_gpus = np.array([c.plan.gpus for c in pre_all])
    cap_per_gpu = pre.capacity * pre.dp / p_gpus
    alone = np.maximum(q.input_len / pre.chunk, 1.0) * pre.t_chunk
    d_gpus = np.array([c.plan.gpus for c in dec_all])
    limit = q.max_tpot_ms * 1e-3 if q.max_tpot_ms is not None else np.inf
    rate = dec.dp[:, None] * dec.b / (max(q.output_len - 1, 1) * dec.tpot)
    per_gpu = np.where(dec.tpot <= limit, rate, 0.0).max(axis=1) / d_gpus
    ip, id_ = _keep(p_gpus, [cap_per_gpu, -alone]), _keep(d_gpus, [per_gpu, -dec.tpot[:, 0]])
    return Sides(settings, decode_settings, terms, [pre_all[i] for i in ip], [dec_all[i] for i in id_],
                 _take(pre, ip), _take(dec, id_))


def _take(side: S, rows: np.ndarray) -> S:
    """The side restricted to plans `rows`."""
    return dataclasses.replace(side, **{f.name: getattr(side, f.name)[rows] for f in dataclasses.fields(side)
                                        if isinstance(getattr(side, f.name), np.ndarray)})


def combos(arch: ModelArch, s: Sides, budget: int, cluster: Cluster, prompt: float,
           link: KvLink | None) -> Combos:
    """Every (prefill plan, x, decode plan, y) of coprime x:y whose unit fits the budget and whose plans the engine
    can pair, with its KV bytes and link."""
    X, Y = _coprime_ratios(MAX_WORKERS)
    pp = [c.plan for c in s.pre_cases]
    dp_ = [c.plan for c in s.dec_cases]
    engine = s.pre_cases[0].args.engine
    ok = np.array([[hetero_reason(arch, engine, a, b) is None for b in dp_] for a in pp])
    gp, gd = np.array([p.gpus for p in pp]), np.array([p.gpus for p in dp_])
    fits = (X[None, None, :] * gp[:, None, None] + Y[None, None, :] * gd[None, :, None] <= budget) & ok[:, :, None]
    i, j, r = np.nonzero(fits)
    # one request's KV: each decode GPU receives its plan's share; the busiest sender (`disagg_transfer.kv_bytes`)
    b = kv_elem_bytes(s.dec_cases[0].args)
    from advisor.cost.disagg_transfer import receive_bytes

    recv = np.array([receive_bytes(arch, p, b, prompt) for p in dp_])
    d_tp, d_pp = np.array([p.tp for p in dp_]), np.array([p.pp for p in dp_])
    p_tp, p_pp = np.array([p.tp for p in pp]), np.array([p.pp for p in pp])
    rep = np.array([replicated(arch, p.tp) or arch.attention == "mla" for p in pp])
    readers = np.where(rep[i], np.minimum(p_tp[i], d_tp[j]), p_tp[i])
    send = recv[j] * d_tp[j] * d_pp[j] / (readers * p_pp[i])
    links = _links(cluster, gp[i], X[r], gd[j], Y[r], link)
    return Combos(ip=i, x=X[r].astype(float), id=j, y=Y[r].astype(float), send=send, recv=recv[j],
                  s_per_byte=links[0], latency_s=links[1])


def _links(cluster: Cluster, gp: np.ndarray, x: np.ndarray, gd: np.ndarray, y: np.ndarray,
           link: KvLink | None) -> tuple[np.ndarray, np.ndarray]:
    """Seconds per byte and latency of each combo's pool link (one per distinct layout)."""
    if link is not None:
        one = PoolLink(((link, 1.0),))
        return np.full(len(gp), one.seconds_per_byte), np.full(len(gp), one.latency_s)
    if not len(gp):  # no pairing fits the budget
        return np.zeros(0), np.zeros(0)
    keys = np.stack([gp, x, gd, y], axis=1).astype(int)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    vals = np.array([(lk.seconds_per_byte, lk.latency_s) for lk in (pool_link(cluster, *map(int, k)) for k in uniq)])
    return vals[inv.ravel(), 0], vals[inv.ravel(), 1]


def search(arch: ModelArch, hw: HardwareProfile, settings: Settings, terms: Terms, q: DisaggQuery,
           decode_settings: Settings | None = None, cluster: Cluster | None = None, gpus: int | None = None,
           link: KvLink | None = None) -> DisaggVerdict:
    """The best disaggregated deployment and the best aggregated plan within `gpus` GPUs (default: the node, or
    the cluster), and the verdict. `link` replaces the link between the pools (a what-if)."""
    cl = cluster or Cluster(hw)
    budget = cl.gpus if cl.multi_node and gpus is None else (gpus or node_gpus(hw, None))
    if budget > cl.gpus:
        raise AdvisorError(f"--gpus {budget}: {cl.describe()} has {cl.gpus}")
    ds = decode_settings or settings
    if ds.engine != settings.engine:
        raise AdvisorError(f"prefill on {settings.engine} and decode on {ds.engine}: one engine serves both pools")
    cases = runnable(arch, hw, settings, cl, budget)
    agg = best_aggregated(cases, terms, q, budget)
    s = sides(cases, cases if ds == settings else runnable(arch, hw, ds, cl, budget), settings, ds, terms, q, budget)
    best = _best_disagg(arch, s, q, budget, cl, link) if s.pre_cases else None
    why = None if s.pre_cases else (f"no plan runs on fewer than {budget} GPUs: the budget holds no prefill pool "
                                    "beside a decode pool")
    return verdict(arch, hw, q, budget, best, agg, why_none=why)


def _best_disagg(arch: ModelArch, s: Sides, q: DisaggQuery, budget: int, cl: Cluster,
                 link: KvLink | None) -> DisaggChoice | None:
    m = combos(arch, s, budget, cl, q.input_len, link)
    if not len(m.ip) or s.pre is None or s.dec is None:
        return None
    engine = s.pre_cases[0].args.engine
    lim_t = q.max_tpot_ms * 1e-3 if q.max_tpot_ms is not None else np.inf
    lim_f = q.max_ttft_ms * 1e-3 if q.max_ttft_ms is not None else np.inf
    unit = m.x * np.array([c.plan.gpus for c in s.pre_cases])[m.ip] + \
        m.y * np.array([c.plan.gpus for c in s.dec_cases])[m.id]
    score, over = np.zeros(len(m.ip)), np.full(len(m.ip), np.inf)
    for lo in range(0, len(m.ip), CHUNK):
        part = Combos(*(getattr(m, f)[lo:lo + CHUNK] for f in Combos.__dataclass_fields__))
        sol = solve(s.pre, s.dec, part, engine)
        miss = np.maximum(sol["tpot"] / lim_t, sol["ttft"] / lim_f)
        miss = np.where(envelope(sol) & (sol["users"] <= q.max_users), miss, np.inf)
        meets = miss <= 1
        tok = np.where(meets, sol["lam"] * q.output_len, 0.0)
        sl = slice(lo, lo + len(part.ip))
        score[sl] = tok.max(axis=1) * (budget // unit[sl]) * (1 + 1e-9 / unit[sl])  # ties: fewer GPUs
        over[sl] = miss.min(axis=1)
    top = np.argsort(-score)[:REFINE] if score.max() > 0 else np.argsort(over)[:1]
    if not np.isfinite(over[top[0]]):
        return None
    picks = [disagg_choice(arch, s, m, int(k), q, budget, cl, link) for k in top]
    return max(picks, key=lambda c: (c.meets, c.total_tok_s, -c.prediction.gpus))
