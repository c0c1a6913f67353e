"""A mixing scheduler's steady state (`serving._mixed`, module docstring of `serving`): r requests running per DP
rank, each lifetime of L steps holds D decode steps and I prompt tokens, so a step carries d = r D / L decode
tokens, spare = max(B - d, 1) budget, p = min(r I / L, spare) prompt tokens; a prompt waits u S / (2 (1 - u))
steps (M/D/1 on the spare budget, u = p / spare, S = I / spare) and L = D + wait + max(S, 1), a fixed point.

It depends on (r, B, D, I) alone, and a sweep's grid of plans x concurrencies x lengths holds few of those (r is a
whole number of requests, B one budget per engine, D and I one per length): `lifetime_queue` solves it once per
distinct (B, D, I) and r and gathers the answers, the same arithmetic element by element (+, -, x, /, min, max:
exact IEEE operations, so the values are the grid's own, bit for bit); other grids are solved as they are."""

from __future__ import annotations

import numpy as np

FIXED_POINT_ROUNDS = 4  # steps per lifetime <-> prefill wait: converges in 3-4 rounds
MAX_UTILISATION = 0.95  # the M/D/1 wait diverges at 1; beyond this the budget is saturated anyway
MAX_TABLE_REQUESTS = 1 << 16  # running requests up to which the answers are tabulated per whole number


def fixed_point(running: np.ndarray, input_len: np.ndarray, decodes: np.ndarray, budget: np.ndarray | float
                ) -> tuple[np.ndarray, ...]:
    """(d, spare, p, S, wait) of the steady state (module docstring), arrays broadcast together."""
    lifetime_steps = decodes + 1.0
    decoding, prompting = running * decodes, running * input_len  # tokens each request brings, over its lifetime
    for _ in range(FIXED_POINT_ROUNDS):
        d = decoding / lifetime_steps
        spare = np.maximum(budget - d, 1.0)
        p = np.minimum(prompting / lifetime_steps, spare)
        service = input_len / spare
        u = np.minimum(p / spare, MAX_UTILISATION)
        wait = u * service / (2 * (1 - u))
        lifetime_steps = decodes + wait + np.maximum(service, 1.0)
    return d, spare, p, service, wait


def lifetime_queue(running: np.ndarray, input_len: np.ndarray, decodes: np.ndarray, budget: np.ndarray | float
                   ) -> tuple[np.ndarray, ...]:
    """`fixed_point` on a [P, C, L] grid of whole numbers of running requests, one prompt length per column L: solved
    once per distinct (B, D) of each length and r from 1 to max r, then gathered (module docstring); any other grid
    as it is."""
    r = np.asarray(running)
    others = (input_len, decodes, budget)
    shape = np.broadcast_shapes(r.shape, *(np.shape(x) for x in others))
    if r.ndim != 3 or r.shape != shape or not r.size \
            or any(np.ndim(x) not in (0, 3) or (np.ndim(x) == 3 and np.shape(x)[1] != 1) for x in others):
        return fixed_point(running, input_len, decodes, budget)  # not a grid with the concurrencies on axis 1
    prompt = np.broadcast_to(np.asarray(input_len, dtype=float), (shape[0], 1, shape[2]))
    if not np.array_equal(r, np.floor(r)) or r.min() < 1 or r.max() > MAX_TABLE_REQUESTS \
            or np.any(prompt != prompt[:1]):
        return fixed_point(running, input_len, decodes, budget)
    n = int(r.max())
    rows = np.arange(1.0, n + 1.0)
    # (budget, decode steps) of each plan and length as one complex number: one 1-D sort finds the distinct pairs
    pairs = np.broadcast_to(np.asarray(budget, dtype=float), (shape[0], 1, shape[2])) \
        + 1j * np.broadcast_to(np.asarray(decodes, dtype=float), (shape[0], 1, shape[2]))
    out = tuple(np.empty(shape) for _ in range(5))
    for k in range(shape[2]):
        keys, of_plan = np.unique(pairs[:, 0, k], return_inverse=True)
        table = fixed_point(rows[None, :], prompt[0, 0, k], keys.imag[:, None], keys.real[:, None])  # [keys, n]
        at = np.ravel(of_plan)[:, None] * n + (r[:, :, k].astype(np.intp) - 1)
        for o, t in zip(out, table, strict=True):
            o[:, :, k] = np.ravel(np.broadcast_to(t, (len(keys), n)))[at]
    return out
