"""The per-user speed vs throughput trade-off of every valid plan at every concurrency, and its frontier.

A point is one (model, plan, concurrency): x = tok/s one user sees (1 / TPOT), y = total output tok/s per GPU
(so that plans on 4 and 8 GPUs compare). A point is on its model's frontier when no other point of the same
model has both more x and more y (Pareto-optimal, both maximised). The operating point is the frontier point
with the most throughput per GPU among those within the latency targets (TPOT and TTFT), if any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict

from advisor.cost.sweep import Sweep
from advisor.decide.query import Query
from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.cost.workload import Settings
    from advisor.hardware import HardwareProfile
    from advisor.hardware.cluster import Cluster
    from advisor.resolve import Resolved


class ParetoPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    hardware: str
    plan: str
    gpus: int
    concurrency: int
    per_user_tok_s: float
    output_tok_s_per_gpu: float
    tpot_ms: float
    ttft_ms: float
    frontier: bool  # on its model's Pareto frontier
    meets: bool  # within the latency targets (True when none is given)
    operating: bool = False  # the model's chosen point: most tok/s per GPU on the frontier within the targets
    mode: str = "agg"  # "disagg": a disaggregated deployment's point (`decide/disagg_pareto.py`)


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True where no other point has x' >= x and y' >= y with one of them strictly greater (maximise both); of
    equal points only the first is kept (the fewer users or GPUs, as the points are ordered)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ge = (x[None, :] >= x[:, None]) & (y[None, :] >= y[:, None])
    gt = (x[None, :] > x[:, None]) | (y[None, :] > y[:, None])
    n = len(x)
    earlier_twin = ge & ~gt & (np.arange(n)[None, :] < np.arange(n)[:, None])
    return ~np.any((ge & gt) | earlier_twin, axis=1)


@dataclass(frozen=True)
class Frontier:
    points: tuple[ParetoPoint, ...]
    query: Query

    def models(self) -> list[str]:
        return list(dict.fromkeys(p.model for p in self.points))


def frontier(sweep: Sweep, q: Query) -> Frontier:
    """Every (model, plan, concurrency) point of the sweep (its first length pair), each model's frontier and
    its operating point."""
    o = sweep.out
    pts: list[dict[str, object]] = []
    for i, case in enumerate(sweep.cases):
        gpus = case.plan.gpus
        for c, users in enumerate(sweep.concurrency):
            tpot, ttft = float(o["tpot_s"][i, c, 0]) * 1e3, float(o["ttft_s"][i, c, 0]) * 1e3
            meets = ((q.max_tpot_ms is None or tpot <= q.max_tpot_ms)
                     and (q.max_ttft_ms is None or ttft <= q.max_ttft_ms))
            pts.append({"model": case.arch.model, "hardware": sweep.hw.id, "plan": case.plan.label(), "gpus": gpus,
                        "concurrency": int(users), "per_user_tok_s": float(o["per_user_tok_s"][i, c, 0]),
                        "output_tok_s_per_gpu": float(o["output_tok_s"][i, c, 0]) / gpus, "tpot_ms": tpot,
                        "ttft_ms": ttft, "meets": meets})
    out: list[ParetoPoint] = []
    for model in dict.fromkeys(str(p["model"]) for p in pts):
        mine = [p for p in pts if p["model"] == model]
        mask = pareto_mask(np.array([p["per_user_tok_s"] for p in mine]),
                           np.array([p["output_tok_s_per_gpu"] for p in mine]))
        ok = [j for j, p in enumerate(mine) if mask[j] and p["meets"]]
        best = max(ok, key=lambda j: float(mine[j]["output_tok_s_per_gpu"]), default=None)  # type: ignore[arg-type]
        out += [ParetoPoint(**p, frontier=bool(mask[j]), operating=j == best) for j, p in enumerate(mine)]
    return Frontier(points=tuple(out), query=q)


def pareto(good: list[Resolved], q: Query, hw: HardwareProfile, settings: Settings, gpus: int | None,
           calibration: str | None, cluster: Cluster | None = None) -> Frontier:
    """Every runnable plan of the models (`candidates.candidates`, as `rank` takes them) at every concurrency of
    the grid, and the frontier (on `cluster`'s nodes with --nodes). AdvisorError when no plan runs at all."""
    from advisor.calibrate.store import terms_for
    from advisor.cost.sweep import all_cases, evaluate
    from advisor.decide.query import GRID

    cases = [c for r in good for c in all_cases(r.arch, hw, settings, gpus, r.source, cluster) if c.runs]
    if not cases:
        raise AdvisorError("nothing to draw: no model has a plan that runs on this box")
    terms, calibrated = terms_for(hw, settings.engine, calibration)
    sweep = evaluate(cases, terms, np.array(GRID, dtype=float), np.array([q.input_len]),
                     np.array([q.output_len]), calibrated)
    return frontier(sweep, q)
