"""Fit collective terms (latency floor + bytes/busbw, two regimes) to measured (size, time) points.

Used by `advisor hw import-nccl` and `scripts/comm_accuracy.py`. Each regime is a two-parameter non-negative
least-squares fit on relative residuals (scipy.optimize.nnls), the split is chosen by search.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from advisor.hardware.comm import bus_factor, two_regime_us

# Ceiling for a fitted bus bandwidth when the data show no size dependence (pure-latency regime).
MAX_BUSBW_GBPS = 1.0e5


@dataclass(frozen=True)
class Fit:
    """Fitted terms for one (op, gpus) series and their error on the points they came from."""

    op: str
    gpus: int
    points: int
    small_latency_us: float
    small_busbw_gbps: float
    switch_bytes: float
    large_latency_us: float
    large_busbw_gbps: float
    median_abs_err_pct: float
    p90_abs_err_pct: float

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def _regime(x: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """(latency_us, busbw_gbps) of t = a + c x, c = 1 / (busbw*1e3), x = bytes*bus_factor: min sum(((a + c x)/t - 1)^2)
    over a, c >= 0, i.e. non-negative least squares of [1/t, x/t] @ [a, c] = 1 (scipy.optimize.nnls)."""
    from scipy.optimize import nnls

    sol, _ = nnls(np.stack([1.0 / t, x / t], axis=1), np.ones_like(t))
    a, c = float(sol[0]), float(sol[1])
    bw = MAX_BUSBW_GBPS if c <= 1.0 / (MAX_BUSBW_GBPS * 1e3) else 1.0 / (c * 1e3)
    return a, bw


def abs_err_pct(pred: np.ndarray, meas: np.ndarray) -> np.ndarray:
    """|pred/meas - 1| in percent."""
    return np.abs(pred / meas - 1.0) * 100.0


def fit_collective(
    op: str, gpus: int, sizes_bytes: np.ndarray, times_us: np.ndarray, min_points_per_regime: int = 3
) -> Fit:
    """Two-regime fit choosing the split size that minimises median + p90 relative error."""
    S = np.asarray(sizes_bytes, dtype=float)
    t = np.asarray(times_us, dtype=float)
    if S.size < 2:
        raise ValueError("need at least 2 points to fit a latency floor and a bus bandwidth")
    order = np.argsort(S, kind="stable")
    S, t = S[order], t[order]
    f = bus_factor(op, gpus)
    best: tuple[float, tuple[float, float, float, float, float]] | None = None
    for split in [0.0, *np.unique(S)[1:]]:
        small = S < split
        ns, nl = int(small.sum()), int((~small).sum())
        if (0 < ns < min_points_per_regime) or nl < min(min_points_per_regime, S.size):
            continue
        a_l, bw_l = _regime(S[~small] * f, t[~small])
        a_s, bw_s = _regime(S[small] * f, t[small]) if ns else (a_l, bw_l)
        pred = two_regime_us(S, f, a_s, bw_s, split, a_l, bw_l)
        err = abs_err_pct(pred, t)
        score = float(np.median(err) + np.percentile(err, 90))
        if best is None or score < best[0] - 1e-9:
            best = (score, (a_s, bw_s, float(split), a_l, bw_l))
    assert best is not None
    a_s, bw_s, split, a_l, bw_l = best[1]
    err = abs_err_pct(two_regime_us(S, f, a_s, bw_s, split, a_l, bw_l), t)
    return Fit(
        op=op,
        gpus=gpus,
        points=int(S.size),
        small_latency_us=round(a_s, 3),
        small_busbw_gbps=round(bw_s, 3),
        switch_bytes=split,
        large_latency_us=round(a_l, 3),
        large_busbw_gbps=round(bw_l, 3),
        median_abs_err_pct=round(float(np.median(err)), 2),
        p90_abs_err_pct=round(float(np.percentile(err, 90)), 2),
    )


def median_curve(sizes_bytes: np.ndarray, times_us: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(sizes, median time per size), sizes ascending: the measured curve a profile keeps (`CollectiveTerm`)."""
    S = np.asarray(sizes_bytes, dtype=float)
    t = np.asarray(times_us, dtype=float)
    sizes = np.unique(S)
    return (tuple(float(x) for x in sizes),
            tuple(round(float(np.median(t[S == x])), 3) for x in sizes))

