"""One engine's step-level terms fitted across every GPU at once (partial pooling): engine-wide terms, and per
GPU a deviation shrunk toward them. A GPU with no rows gets the engine-wide terms and its own spec sheet.

Each term lives in a bounded logit space, v = lo + (hi - lo) sigmoid(z). The engine-wide z_g carries a soft
prior toward `Terms()` (PRIOR_WEIGHT per term, ~ one 30% error on one measured value); a GPU's value is
z_g + d_h with a shrinkage penalty SHRINK d_h (a deviation of 1 in logit space costs as much as ~2 rows 50%
off). The loss is on log(predicted / measured) of TTFT, TPOT and output tok/s over every row, Cauchy at a tighter
scale on TTFT than on the rest (`calibrate/loss.py`; `scipy.optimize.least_squares`, trf; the Jacobian's block
structure is passed so that a GPU's deviations are differenced together). A term the rows cannot inform keeps
its prior (engine-wide) or no deviation (per GPU). What it shares with the per-GPU calibrator (rows, residuals,
prior weight, solver settings, which rows inform which term) is `calibrate/base.py: CalibratorBase`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from advisor.calibrate.base import (
    NAMES,
    PRIOR_WEIGHT,
    CalibratorBase,
    architecture_of,
    consistent,
    measured,
    subset,
)
from advisor.calibrate.consistency import slower_than_dominated
from advisor.calibrate.loss import NAME as LOSS_NAME
from advisor.calibrate.predict_rows import METRIC_KEYS, Bucket, run_bucket
from advisor.cost.terms import BOUNDS, Terms, at_bound

Key = tuple[str, str]
SHRINK = 0.5
METHOD = (f"scipy.optimize.least_squares (trf, {LOSS_NAME}) on log(pred/meas) of ttft_ms, tpot_ms, "
          f"output_tok_s over every GPU of the engine; engine-wide terms with a prior toward Terms() (weight "
          f"{PRIOR_WEIGHT}) and per-GPU deviations shrunk toward them (weight {SHRINK}), in bounded logit space")


def _z(name: str, v: float) -> float:
    lo, hi = BOUNDS[name]
    u = np.clip((v - lo) / (hi - lo), 1e-6, 1 - 1e-6)
    return float(np.log(u / (1 - u)))


def _v(name: str, z: np.ndarray | float) -> np.ndarray | float:
    lo, hi = BOUNDS[name]
    return lo + (hi - lo) / (1 + np.exp(-z))


class PooledCalibrator(CalibratorBase):
    """`PooledCalibrator(prior).fit(buckets)` (buckets of one engine, keyed (hardware, engine)) sets `global_`
    (engine-wide Terms), `per_hardware_` (hardware -> Terms), `deviations_` (hardware -> {term: logit shift}),
    `refused_` (term -> why it kept its prior), `bounds_hit_`, `rows_` (hardware -> rows fitted), `set_aside_`
    (hardware -> why sweeps that contradict themselves or a GPU they outrank on every spec, and rows beyond their
    GPUs' peak, were left out, `calibrate/consistency.py`) and returns self;
    `terms_for(hardware)` gives a GPU's terms (engine-wide for one it never saw)."""

    # differ from the base, as this fit always did: every TTFT row informs the wave share (not only those at more
    # than one user), and the per-layer time needs no two layer counts (a GPU's deviation is shrunk instead)
    informs: ClassVar[Mapping[str, str]] = {**CalibratorBase.informs, "bench_wave_share": "ttft"}
    layers_must_differ: ClassVar[bool] = False
    fit_argument: ClassVar[str] = "buckets"

    global_: Terms
    per_hardware_: dict[str, Terms]
    deviations_: dict[str, dict[str, float]]
    refused_: dict[str, str]
    bounds_hit_: list[str]
    rows_: dict[str, int]
    set_aside_: dict[str, list[str]]

    def __init__(self, prior: Terms | None = None, shrink: float = SHRINK, base: Terms | None = None) -> None:
        """`base`: fixed engine-wide terms (only the per-GPU deviations are fitted), e.g. a user's own box."""
        self.prior = prior or Terms()
        self.shrink = shrink
        self.base = base

    def fit(self, buckets: Mapping[Key, Bucket]) -> PooledCalibrator:
        from scipy.sparse import lil_matrix

        buckets, self.set_aside_ = _consistent(buckets)
        keys = [k for k, b in buckets.items() if b.index]
        informs = {k: self.informed(buckets[k]) for k in keys}
        union = set().union(*informs.values())
        g_names = [] if self.base is not None else [n for n in NAMES if n in union]
        d_names = [(k, n) for k in keys for n in informs[k]]
        start = self.base or self.prior
        z0 = np.array([_z(n, getattr(start, n)) for n in g_names] + [0.0] * len(d_names))
        meas = {k: measured(buckets[k]) for k in keys}

        def terms_at(x: np.ndarray, key: Key) -> Terms:
            vals = {n: _z(n, getattr(start, n)) for n in NAMES}
            vals.update({n: x[i] for i, n in enumerate(g_names)})
            for j, (k, n) in enumerate(d_names):
                if k == key:
                    vals[n] += x[len(g_names) + j]
            return Terms(**{n: float(_v(n, z)) for n, z in vals.items()})

        def residuals(x: np.ndarray) -> np.ndarray:
            parts = [r for k in keys for r in self.log_ratios(run_bucket(buckets[k], terms_at(x, k)), meas[k])]
            parts.append(self.prior_weight * (x[:len(g_names)] - z0[:len(g_names)]))
            parts.append(self.shrink * x[len(g_names):])
            return self.finite(parts)

        n_par = len(g_names) + len(d_names)
        if n_par:
            sizes = [sum(int(np.isfinite(meas[k][m]).sum()) for m in METRIC_KEYS) for k in keys]
            J = lil_matrix((sum(sizes) + n_par, n_par), dtype=np.int8)
            offsets = np.concatenate([[0], np.cumsum(sizes)])
            J[:offsets[-1], :len(g_names)] = 1
            for j, (k, _) in enumerate(d_names):
                i = keys.index(k)
                J[offsets[i]:offsets[i + 1], len(g_names) + j] = 1
            J[offsets[-1]:, :] = np.eye(n_par, dtype=np.int8)
            x = self.solve(residuals, z0, [meas[k] for k in keys], n_par, jac_sparsity=J.tocsr())
        else:
            x = z0
        self.global_ = terms_at(np.concatenate([x[:len(g_names)], np.zeros(len(d_names))]), ("", ""))
        self.per_hardware_ = {k[0]: terms_at(x, k) for k in keys}
        self.deviations_ = {k[0]: {n: float(x[len(g_names) + j]) for j, (kk, n) in enumerate(d_names) if kk == k}
                            for k in keys}
        self.refused_ = {} if self.base is not None else {
            n: f"no GPU has {self.min_rows[n]} rows that measure it; kept at the prior"
            for n in NAMES if n not in union}
        self.bounds_hit_ = [n for n in g_names if at_bound(n, getattr(self.global_, n))]
        self.rows_ = {k[0]: len(buckets[k].index) for k in keys}
        return self

    def terms_for(self, hardware: str) -> Terms:
        return self.per_hardware_.get(hardware, self.global_)


def _consistent(buckets: Mapping[Key, Bucket]) -> tuple[dict[Key, Bucket], dict[str, list[str]]]:
    """The buckets without the rows of sweeps that contradict themselves or a GPU they outrank on every spec, and
    the rows beyond their GPUs' peak (`calibrate/consistency.py`), and per GPU why rows were set aside."""
    cleaned = {k: consistent(b) for k, b in buckets.items()}
    why = {k: set(bad.values()) for k, (_, bad) in cleaned.items()}
    slow = slower_than_dominated({k[0]: (b.hw, b.rows) for k, (b, _) in cleaned.items()}, architecture_of)
    out: dict[Key, Bucket] = {}
    for k, (b, _) in cleaned.items():
        drop = slow.get(k[0], {})
        out[k] = subset(b, np.array([j not in drop for j in range(len(b.rows))], bool)) if drop else b
        why[k] |= set(drop.values())
    return out, {k[0]: sorted(w) for k, w in why.items() if w}
