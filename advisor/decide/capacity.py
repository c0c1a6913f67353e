"""Capacity at a latency target: how many users a plan serves within --max-tpot-ms/--max-ttft-ms, what a
million output tokens costs in GPU-hours and energy there, and how many replicas of the plan the node holds.

- Users at the SLO: the largest concurrency whose predicted TPOT and TTFT are within the limits and whose users
  all run (none waits for KV room or a max_num_seqs slot). The ranking's sweep brackets it between two grid
  points; every integer between them is then predicted in one vectorised call (exact, no interpolation). The
  binding limit is the one the next user would break: TPOT, TTFT, or "running" (the engine holds no more); "none"
  when every load of the grid is within the limits: the answer is then a lower bound, the grid's last load.
- $/Mtok = price per GPU-hour x GPUs / (output tok/s x 3600) x 1e6, at the plan's operating point.
- kWh/Mtok = board power x GPUs / output tok/s x 1e6 / 3.6e6: an upper bound, every GPU at its rated board
  power (the profile's `power_w`, sourced) for the whole time.
- Replicas: a plan on fewer GPUs than the node runs node // GPUs times side by side (independent engines);
  how they share the users is `decide/replicas.py`. Users at the SLO are one replica's: the replicas hold that many
  times as many; $ and kWh count every replica's GPUs against their summed tok/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.cost.sweep import Case, Sweep, evaluate
from advisor.cost.terms import Terms
from advisor.decide.query import Query

SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6


@dataclass(frozen=True)
class SloCapacity:
    users: int  # largest concurrency within the limits (0: not even one user)
    output_tok_s: float  # total output tok/s there (0 when users is 0)
    binding: str  # "TPOT", "TTFT" or "running": what the next user breaks; "none" when none binds up to the grid's
    # last load (`users` is then a lower bound)


def over_limits(tpot_s: np.ndarray, ttft_s: np.ndarray, q: Query) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT / limit, TTFT / limit) per point; a limit not asked is 0."""
    tp = tpot_s * 1e3 / q.max_tpot_ms if q.max_tpot_ms is not None else np.zeros_like(tpot_s)
    tt = ttft_s * 1e3 / q.max_ttft_ms if q.max_ttft_ms is not None else np.zeros_like(ttft_s)
    return tp, tt


def slo_capacity(sweep: Sweep, i: int, q: Query, case: Case, terms: Terms) -> SloCapacity:
    """Users at the SLO for case i of the sweep (its grid brackets the answer; the bracket is then resolved)."""
    grid = sweep.concurrency
    o = sweep.out
    tp, tt = over_limits(o["tpot_s"][i, :, 0], o["ttft_s"][i, :, 0], q)
    ok = (np.maximum(tp, tt) <= 1) & (o["running"][i, :, 0] >= grid)
    if ok.all():
        top = int(grid[-1])
        return SloCapacity(top, float(o["output_tok_s"][i, -1, 0]), "none")
    first_bad = int(np.argmax(~ok))
    lo = int(grid[first_bad - 1]) if first_bad > 0 else 0
    hi = int(grid[first_bad])
    users = np.arange(max(lo, 1), hi + 1, dtype=float)
    fine = evaluate([case], terms, users, sweep.input_len[:1], sweep.output_len[:1]).out
    ftp, ftt = over_limits(fine["tpot_s"][0, :, 0], fine["ttft_s"][0, :, 0], q)
    waits = fine["running"][0, :, 0] < users
    good = (np.maximum(ftp, ftt) <= 1) & ~waits
    # the first point past the limits (monotone in users): the answer is the one before it
    n_ok = int(np.argmax(~good)) if not good.all() else len(users)
    nxt = min(n_ok, len(users) - 1)
    binding = "running" if waits[nxt] and max(ftp[nxt], ftt[nxt]) <= 1 else ("TPOT" if ftp[nxt] >= ftt[nxt] else "TTFT")
    if n_ok == 0:
        return SloCapacity(0, 0.0, binding)
    j = n_ok - 1
    return SloCapacity(int(users[j]), float(fine["output_tok_s"][0, j, 0]), binding)


def usd_per_mtok(output_tok_s: float, gpus: int, gpu_hour_price: float) -> float | None:
    """Dollars per million output tokens at `output_tok_s` on `gpus` GPUs rented at `gpu_hour_price` each."""
    if output_tok_s <= 0:
        return None
    return gpu_hour_price * gpus / (output_tok_s * SECONDS_PER_HOUR) * 1e6


def kwh_per_mtok(output_tok_s: float, gpus: int, power_w: float | None) -> float | None:
    """kWh per million output tokens, every GPU at its rated board power (an upper bound)."""
    if output_tok_s <= 0 or not power_w:
        return None
    return power_w * gpus / output_tok_s * 1e6 / JOULES_PER_KWH


def replicas(plan_gpus: int, node_gpus: int) -> int:
    """Independent copies of a plan the node holds side by side."""
    return max(node_gpus // max(plan_gpus, 1), 1)
