"""The collectives of one engine step (`collectives.step_collectives`, slot by slot: `collectives.SLOTS`), timed on
the profile's measured terms by the step's `Comm` (`step.comm_fn`), each slot's groups of plans at once."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from advisor.cost.batches import Batches, rows_of
from advisor.cost.collectives import SLOTS
from advisor.cost.features import Features

# (op, bytes, group size) -> seconds; on a cluster also (..., fast domains spanned, backend) (`cost/cluster_comm.py`)
Comm = Callable[..., np.ndarray]

Groups = list[tuple[int, int, np.ndarray]]  # (group size, fast domains spanned, positions of the plans with them)
_GROUPS: list[tuple[np.ndarray, list[Groups]]] = []  # the last features' groups per slot (a sweep steps ~4 times)


def _slot_groups(F: Features) -> list[Groups]:
    """Per collective slot, its groups of size > 1; computed once per features (the step is evaluated several times
    per sweep on the same plans)."""
    last = _GROUPS[0] if _GROUPS else None
    if last is not None and last[0] is F.coll_group:
        return last[1]
    g = F.coll_group.reshape(F.coll_group.shape[0], -1, F.coll_group.shape[-1])[:, 0]  # [P, S]
    d = F.coll_span.reshape(F.coll_span.shape[0], -1, F.coll_span.shape[-1])[:, 0]
    groups = [_groups_of(g[:, k], d[:, k]) for k in range(len(SLOTS))]
    _GROUPS[:] = [(F.coll_group, groups)]
    return groups


def _groups_of(size: np.ndarray, span: np.ndarray) -> Groups:
    """(group size, fast domains spanned, ascending positions of the plans with them) for each (size > 1, span), in
    ascending (size, span)."""
    order = np.lexsort((span, size))  # stable: each group's positions stay ascending
    if not order.size:
        return []
    n, m = size[order], span[order]
    cut = np.flatnonzero((n[1:] != n[:-1]) | (m[1:] != m[:-1])) + 1
    return [(int(n[a]), int(m[a]), order[a:b]) for a, b in zip(np.r_[0, cut], np.r_[cut, len(order)], strict=True)
            if n[a] > 1]


def _by_moe_shape(F: Features, plans: np.ndarray) -> list[tuple[np.ndarray, tuple[int, int, int]]]:
    """The plans split by MoE shape (hidden, top-k, experts): what an expert all-to-all's time depends on."""
    key = np.stack([np.ravel(F.hidden)[plans], np.ravel(F.topk)[plans], np.ravel(F.experts)[plans]], axis=1)
    return [(plans[(key == u).all(axis=1)], (int(u[0]), int(u[1]), int(u[2]))) for u in np.unique(key, axis=0)]


def collectives_time(F: Features, comm: Comm, tokens: np.ndarray, sampled: np.ndarray,
                     only: tuple[str, ...] | None = None, batches: Batches | None = None) -> np.ndarray:
    """Seconds of one forward's collectives (`collectives.step_collectives`, summed per slot; `only`: these slots'
    names alone): a message is the (padded) tokens per DP rank, every DP rank's for dispatch/combine, sampled rows,
    or fixed. `batches`: the distinct padded batches of `tokens` (`cost/batches.py`), on which the slots not sized
    by sampled rows are then timed and spread over the grid. Either way the sum is (slots before the first grid
    slot) + (the grid slots: sampled rows, and fixed messages after one) + (the other slots after it), each part
    in slot order, so both give the same bits."""
    shape = np.broadcast_shapes(np.shape(tokens), F.tp.shape)
    at = tokens if batches is None else batches.values
    units = {"tokens": at, "dp_tokens": at * F.dp, "sampled": np.maximum(sampled, 1), "fixed": 1.0}
    part = shape if batches is None else np.broadcast_shapes(at.shape, F.tp.shape)

    def grid(a: np.ndarray) -> np.ndarray:
        return a if batches is None else batches.spread(a)

    head, total, later = np.zeros(part), None, None
    for k, (slot, groups) in enumerate(zip(SLOTS, _slot_groups(F), strict=True)):
        if not groups or not np.any(F.coll_calls[..., k]) or (only is not None and slot.name not in only):
            continue
        unit = units[slot.scales_with]
        if slot.scales_with == "sampled" or (slot.scales_with == "fixed" and total is not None):
            total = grid(head) if total is None else total
            _add_slot(total, F, comm, k, groups, unit)
        elif total is None:
            _add_slot(head, F, comm, k, groups, unit)
        else:
            later = np.zeros(part) if later is None else later
            _add_slot(later, F, comm, k, groups, unit)
    if total is None:
        return grid(head)
    if later is not None:
        total += grid(later)
    return total


def _add_slot(total: np.ndarray, F: Features, comm: Comm, k: int, groups: Groups, unit: np.ndarray | float) -> None:
    """Adds slot k's seconds (`SLOTS`) to `total` on the plans of each of its groups, for messages of `unit` x the
    slot's bytes per unit."""
    slot, shape, calls = SLOTS[k], total.shape, F.coll_calls[..., k]
    for n, span, plans in groups:  # plans: positions on the leading (plan) axis; only their rows are computed
        if slot.backend is not None:  # an expert all-to-all: timed per MoE shape (`cost/cluster_comm.py`)
            for rows, moe in _by_moe_shape(F, plans):
                per = rows_of(unit, rows, shape) * rows_of(F.coll_bytes[..., k], rows, shape)
                total[rows] += rows_of(calls, rows, shape) * comm(slot.op, per, n, span, slot.backend, moe)
            continue
        nbytes = rows_of(unit, plans, shape) * rows_of(F.coll_bytes[..., k], plans, shape)
        t = comm(slot.op, nbytes, n) if span <= 1 else comm(slot.op, nbytes, n, span)
        total[plans] += rows_of(calls, plans, shape) * t
