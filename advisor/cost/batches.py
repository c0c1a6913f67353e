"""The distinct padded batches of each plan in a step's grid. A step's dense GEMMs, MoE layers and token-sized
collectives depend on the plan and on the tokens the step pads its batch to (`step.pad_tokens`) only, and over a
sweep's concurrencies x lengths a plan takes few distinct sizes (CUDA-graph capture sizes; eager batches repeat
across lengths): each (plan, size) is costed once, in a table [P, K] of every plan's distinct values, then spread
back over the grid. The plan axis stays the leading one, so the features broadcast against the table as they do
against the grid. Every formula is per point, so the spread terms are the grid's own, bit for bit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DISTINCT_SHARE = 0.75  # up to this share of distinct values per grid point the table pays for its spreading


@dataclass(frozen=True)
class Batches:
    """`values` [P, K, 1, ...]: each plan's distinct values (a plan with fewer than K repeats its smallest);
    `entry` [P x N]: the flat position in `values` of each grid point's value; `shape`: the grid's ([P, ...], N
    points per plan)."""

    values: np.ndarray
    entry: np.ndarray
    shape: tuple[int, ...]

    def spread(self, a: np.ndarray | float) -> np.ndarray:
        """A term computed on `values` (or per plan only) at every point of the grid."""
        return np.broadcast_to(a, self.values.shape).ravel()[self.entry].reshape(self.shape)


def distinct(values: np.ndarray, plan_shape: tuple[int, ...]) -> Batches | None:
    """The `Batches` of a grid of `values` against features of shape `plan_shape` ([P, 1, ...]), or None when the
    grid has no axis beyond the plans or its values are mostly distinct (costing the grid itself is then cheaper)."""
    shape = np.broadcast_shapes(np.shape(values), plan_shape)
    if len(plan_shape) < 2 or len(shape) != len(plan_shape) or not shape[0]:
        return None
    plans = shape[0]
    grid = np.broadcast_to(values, shape).reshape(plans, -1)
    n = grid.shape[1]
    order = np.argsort(grid, axis=1, kind="stable")
    order += np.arange(0, plans * n, n)[:, None]  # flat positions, row by row in ascending values
    ranked = grid.ravel()[order]
    rank = np.zeros(ranked.shape, dtype=np.intp)
    np.cumsum(ranked[:, 1:] != ranked[:, :-1], axis=1, out=rank[:, 1:])  # each sorted point's distinct value
    k = int(rank[:, -1].max()) + 1
    if k > DISTINCT_SHARE * n:
        return None
    rank += np.arange(0, plans * k, k)[:, None]
    table = np.repeat(ranked[:, :1], k, axis=1)
    table.ravel()[rank] = ranked
    entry = np.empty(plans * n, dtype=np.intp)
    entry[order] = rank
    return Batches(values=table.reshape((plans, k) + (1,) * (len(shape) - 2)), entry=entry, shape=shape)


def rows_of(a: np.ndarray | float, rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`a` on the plans `rows` of `shape`, left to broadcast over the other axes (a per-plan [P, 1, 1] feature
    is not expanded to [P, C, L] before it is indexed)."""
    a = np.asarray(a)
    return a[rows] if a.ndim == len(shape) and a.shape[0] == shape[0] != 1 else a
