"""A deployment on the GPU budget: a plan on fewer GPUs than the budget runs as independent replicas side by side
(each its own engine on its own GPUs, behind one router), and the ranking compares whole deployments at the same
total users. Replicas are their own notion: attention-DP inside one engine stays `Plan.dp`.

- Replicas: r = budget // plan GPUs (`capacity.replicas`).
- Users: U users in total are spread evenly over the replicas (a round-robin router): with lo = U // r and
  k = U - r * lo, k replicas serve lo + 1 users and r - k serve lo (U < r: U replicas serve one user each, the
  others idle).
- The deployment at U: TTFT, TPOT and per-user tok/s are the busiest replica's (the user a latency target is
  about); output tok/s and running sequences are the sum over the replicas, each predicted at its own load.
- Every load a total of the query's grid puts on a replica is in the one sweep (`replica_grid`), so r replicas at
  U users are r exact predictions at U / r users (eight TP1 replicas at 64 users are eight times one TP1 at 8),
  never an interpolation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from advisor.cost.prediction import Prediction
from advisor.cost.sweep import Sweep


class Deployment(BaseModel):
    """The deployment a ranked row stands for, at its scored load: replicas of the plan on the budget and how the
    users spread over them (`RankedPlan.deployment`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    replicas: int  # copies of the plan side by side (1: the plan alone)
    gpus: int  # GPUs of all replicas
    users: int  # users of the whole deployment
    users_per_replica: list[int]  # each replica's users, busiest first (the row's prediction is the first one's)
    output_tok_s: float  # the sum over the replicas
    running: int  # sequences decoding at once, summed over the replicas


def split(users: int, replicas: int) -> list[int]:
    """Each replica's users when `users` spread evenly over `replicas` (busiest first)."""
    lo, k = divmod(users, replicas)
    return [lo + 1] * k + [lo] * (replicas - k)


def replica_grid(grid: Iterable[int], replicas: Iterable[int]) -> np.ndarray:
    """Every load (users on one replica) that a total in `grid` puts on a replica for each replica count, and the
    grid itself (one replica), sorted."""
    loads = {int(u) for u in grid}
    for r in set(replicas):
        for u in grid:
            loads.update(x for x in split(int(u), r) if x > 0)
    return np.array(sorted(loads), dtype=float)


@dataclass(frozen=True)
class Deployments:
    """Every case's deployment at every total of the grid [P, G], from the per-replica sweep."""

    replicas: np.ndarray  # [P]
    users: np.ndarray  # [G] total users
    busiest: np.ndarray  # [P, G] users on the busiest replica (a column value of the per-replica sweep)
    tpot_s: np.ndarray  # [P, G] the busiest replica's
    ttft_s: np.ndarray
    per_user_tok_s: np.ndarray
    output_tok_s: np.ndarray  # [P, G] summed over replicas
    running: np.ndarray  # [P, G] summed over replicas


def deployments(sweep: Sweep, replicas: np.ndarray, users: np.ndarray) -> Deployments:
    """The deployments of the sweep's cases (`replicas` each) at each total of `users`; the sweep holds every
    per-replica load (`replica_grid`)."""
    r = np.asarray(replicas, dtype=int)[:, None]
    u = np.asarray(users, dtype=int)[None, :]
    lo = u // r
    k = u - lo * r  # replicas carrying lo + 1 users
    busiest = lo + (k > 0)
    conc = sweep.concurrency
    o = sweep.out

    def at(key: str, load: np.ndarray) -> np.ndarray:
        col = np.searchsorted(conc, np.maximum(load, 1))
        assert np.all(conc[col] == np.maximum(load, 1)), "a replica's load is missing from the sweep"
        return np.take_along_axis(o[key][:, :, 0], col, axis=1)

    def total(key: str) -> np.ndarray:  # (a load looked up where no replica carries it counts zero times)
        return k * at(key, np.where(k > 0, lo + 1, lo)) + (r - k) * np.where(lo > 0, at(key, lo), 0.0)

    return Deployments(replicas=r[:, 0], users=u[0], busiest=busiest, tpot_s=at("tpot_s", busiest),
                       ttft_s=at("ttft_s", busiest), per_user_tok_s=at("per_user_tok_s", busiest),
                       output_tok_s=total("output_tok_s"), running=total("running"))


def deployment(d: Deployments, i: int, col: int, plan_gpus: int) -> Deployment:
    """Case i's deployment at grid column `col`."""
    r, users = int(d.replicas[i]), int(d.users[col])
    return Deployment(replicas=r, gpus=r * plan_gpus, users=users, users_per_replica=split(users, r),
                      output_tok_s=float(d.output_tok_s[i, col]), running=int(round(float(d.running[i, col]))))


def on_grid(sweep: Sweep, users: Iterable[int]) -> Sweep:
    """The sweep at the columns of `users` only (each a column of it): what a figure of the plans draws."""
    col = np.searchsorted(sweep.concurrency, np.array(list(users), dtype=float))

    def frozen(a: np.ndarray) -> np.ndarray:
        a = np.array(a)
        a.setflags(write=False)
        return a

    return replace(sweep, concurrency=frozen(sweep.concurrency[col]),
                   out={key: frozen(v[:, col, :]) for key, v in sweep.out.items()})


P = TypeVar("P", bound=Prediction)


def whole(d: P) -> P:
    """A ranked row as its whole deployment, for a table: the plan as "N x PLAN", the users in all and the summed
    tok/s (its interval scaled with it); TTFT, TPOT and per-user tok/s stay the busiest replica's. A row of one
    replica is returned as it is."""
    dep: Deployment | None = getattr(d, "deployment", None)
    if dep is None or dep.replicas == 1:
        return d
    scale = dep.output_tok_s / d.output_tok_s if d.output_tok_s else 1.0
    interval = {k: v * scale if k.startswith("output_tok_s") else v for k, v in (d.interval or {}).items()}
    return d.model_copy(update={"plan": d.plan.model_copy(update={"label": f"{dep.replicas} x {d.plan.label}"}),
                                "workload": d.workload.model_copy(update={"concurrency": dep.users}),
                                "output_tok_s": dep.output_tok_s, "interval": interval or d.interval})
