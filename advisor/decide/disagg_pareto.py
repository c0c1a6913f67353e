"""The disaggregated frontier of `pareto --mode disagg|auto`: per-user speed (1 / TPOT) against output tok/s per GPU
over the deployments the search considers (`decide/disagg.py`: each side's plans pruned, every coprime ratio x:y
whose unit fits the budget, each at its decode-batch grid), the Pareto-optimal points kept. A point is one
deployment unit at one load: its users are the closed loop's at that decode batch (`cost/disagg_serving.py:
solve`), its GPUs the unit's. The operating point is the frontier point with the most tok/s per GPU within the
targets, as for aggregated plans (`decide/pareto.py`).

With no TPOT target the decode side keeps, per GPU count, the plans with the most tok/s per GPU at any batch and
the one with the lowest TPOT, so the frontier's fast end and its throughput end are both searched."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from advisor.cost.disagg_serving import Combos, envelope, solve
from advisor.decide.pareto import ParetoPoint

if TYPE_CHECKING:
    from advisor.cost.terms import Terms
    from advisor.cost.workload import Settings
    from advisor.decide.query import Query
    from advisor.hardware import HardwareProfile
    from advisor.hardware.cluster import Cluster
    from advisor.resolve import Resolved

CHUNK = 20_000


def front_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True where no other point has both more x and more y (maximise both), O(n log n): sorted by x descending
    (ties by y descending), a point is kept when its y beats every point before it."""
    order = np.lexsort((-y, -x))
    best = np.maximum.accumulate(np.concatenate([[-np.inf], y[order]]))[:-1]
    keep = np.zeros(len(x), bool)
    keep[order] = y[order] > best
    return keep


def disagg_frontier(r: Resolved, hw: HardwareProfile, settings: Settings, terms: Terms, q: Query,
                    cluster: Cluster | None = None, gpus: int | None = None) -> list[ParetoPoint]:
    """The model's disaggregated frontier points on the budget (the node, --gpus of it, or the cluster), mode
    "disagg", with its operating point; [] when no prefill pool fits beside a decode pool."""
    from advisor.cost.sweep import node_gpus
    from advisor.decide.disagg import combos, runnable, sides
    from advisor.decide.disagg_verdict import DisaggQuery
    from advisor.hardware.cluster import Cluster

    cl = cluster or Cluster(hw)
    budget = cl.gpus if cl.multi_node else node_gpus(hw, gpus)
    dq = DisaggQuery(input_len=q.input_len, output_len=max(q.output_len, 2))
    cases = runnable(r.arch, hw, settings, cl, budget)
    s = sides(cases, cases, settings, settings, terms, dq, budget)
    if not s.pre_cases or s.pre is None or s.dec is None:
        return []
    m = combos(r.arch, s, budget, cl, q.input_len, None)
    if not len(m.ip):
        return []
    gp = np.array([c.plan.gpus for c in s.pre_cases])
    gd = np.array([c.plan.gpus for c in s.dec_cases])
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("x", "y", "tpot", "ttft", "users", "k")}
    engine = s.pre_cases[0].args.engine
    for lo in range(0, len(m.ip), CHUNK):
        part = Combos(*(getattr(m, f)[lo:lo + CHUNK] for f in Combos.__dataclass_fields__))
        sol = solve(s.pre, s.dec, part, engine)
        unit = part.x * gp[part.ip] + part.y * gd[part.id]
        ok = envelope(sol) & np.isfinite(sol["tpot"]) & (sol["tpot"] > 0) & (sol["users"] >= 1)  # whole users
        i, j = np.nonzero(ok)
        cols["x"].append(1 / sol["tpot"][i, j])
        cols["y"].append(sol["lam"][i, j] * q.output_len / unit[i])
        for key in ("tpot", "ttft", "users"):
            cols[key].append(sol[key][i, j])
        cols["k"].append(i + lo)
    a = {k: np.concatenate(v) for k, v in cols.items()}
    keep = np.flatnonzero(front_mask(a["x"], a["y"]))
    return _points(r, hw, q, s, m, a, keep)


def _points(r: Resolved, hw: HardwareProfile, q: Query, s: object, m: Combos, a: dict[str, np.ndarray],
            keep: np.ndarray) -> list[ParetoPoint]:
    """The frontier points as `ParetoPoint`s (fastest first), the operating one marked."""
    keep = keep[np.argsort(-a["x"][keep])]
    pre, dec = s.pre_cases, s.dec_cases  # type: ignore[attr-defined]
    out = []
    for n in keep:
        k = int(a["k"][n])
        x, y = int(m.x[k]), int(m.y[k])
        pc, dc = pre[int(m.ip[k])], dec[int(m.id[k])]
        tpot, ttft = float(a["tpot"][n]) * 1e3, float(a["ttft"][n]) * 1e3
        meets = (q.max_tpot_ms is None or tpot <= q.max_tpot_ms) and (q.max_ttft_ms is None or ttft <= q.max_ttft_ms)
        out.append(ParetoPoint(model=r.arch.model, hardware=hw.id, mode="disagg",
                               plan=f"{x} x {pc.plan.label()} + {y} x {dc.plan.label()}",
                               gpus=x * pc.plan.gpus + y * dc.plan.gpus,
                               concurrency=max(int(round(float(a["users"][n]))), 1),
                               per_user_tok_s=float(a["x"][n]), output_tok_s_per_gpu=float(a["y"][n]),
                               tpot_ms=tpot, ttft_ms=ttft, frontier=True, meets=meets))
    ok = [j for j, p in enumerate(out) if p.meets]
    if ok:
        best = max(ok, key=lambda j: out[j].output_tok_s_per_gpu)
        out[best] = out[best].model_copy(update={"operating": True})
    return out
