"""Fit the efficiency terms (advisor.cost.terms) of one (hardware, engine) to measured rows.

Method: scipy.optimize.least_squares (method "trf", bounds `terms.BOUNDS`) on the log-residuals
log(predicted / measured) of TTFT, TPOT and output tok/s (Cauchy loss, tighter on TTFT than on the rest:
`calibrate/loss.py`), plus one soft-prior residual per fitted term,
PRIOR_WEIGHT * (log(x + s) - log(x0 + s)), pulling it toward its `Terms()` default (s = 0 for efficiencies,
s = x0 for the overheads so that they may reach 0). A term the rows cannot inform is refused and kept at
its prior. What it shares with the pooled calibrator (rows, residuals, prior weight, solver settings, which rows
inform which term) is `calibrate/base.py: CalibratorBase`. Cross-validation: k-fold grouped by model
(k = min(5, models)) when >= 3 models, otherwise leave-one-row-out; its signed errors give `cv_` and
`tpot_residual_pct_`. `Calibrator` has the scikit-learn
estimator shape: options in the constructor, `fit(bucket)` learns the attributes ending in `_`, `predict(bucket)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from advisor.calibrate.base import PRIOR_WEIGHT, CalibratorBase, consistent, measured, subset
from advisor.calibrate.loss import NAME as LOSS_NAME
from advisor.calibrate.measurements import Measurement
from advisor.calibrate.predict_rows import METRIC_KEYS, Bucket, run_bucket
from advisor.calibrate.report import metric_summary
from advisor.cost.terms import BOUNDS, Terms, at_bound
from advisor.errors import AdvisorError

LOO_MAX_ROWS = 40  # above this, leave-one-row-out costs one fit per row; folds of configurations instead
METHOD = ("scipy.optimize.least_squares(method='trf', bounds=terms.BOUNDS) on log(pred/meas) of ttft_ms, "
          f"tpot_ms, output_tok_s, loss {LOSS_NAME}; soft log-priors toward Terms() defaults, "
          f"weight {PRIOR_WEIGHT}")


class Calibrator(CalibratorBase):
    """Fits the terms of one (hardware, engine) bucket, scikit-learn style (method: the module docstring).

    `Calibrator(prior, cv=True).fit(bucket)` sets `terms_`, `fitted_`, `refused_`, `bounds_hit_`, `rows_used_`,
    `set_aside_` (the rows of sweeps that contradict themselves, left out, with the reason:
    `calibrate/consistency.py`),
    `cv_` (per-metric summaries of held-out errors), `cv_method_` and `tpot_residual_pct_` and returns itself;
    `predict(bucket)` gives ttft_ms, tpot_ms, output_tok_s [N] under `terms_`."""

    # differs from the base (3): the bandwidth scale from 2 decode rows, as this fit always did
    min_rows: ClassVar[Mapping[str, int]] = {**CalibratorBase.min_rows, "bw_scale": 2}

    terms_: Terms
    fitted_: list[str]
    refused_: dict[str, str]
    bounds_hit_: list[str]
    rows_used_: int
    set_aside_: list[tuple[Measurement, str]]
    cv_: dict[str, dict[str, float]]
    cv_method_: str
    tpot_residual_pct_: tuple[float, float] | None

    def __init__(self, prior: Terms | None = None, cv: bool = True) -> None:
        self.prior = prior or Terms()
        self.cv = cv

    def fit(self, bucket: Bucket) -> Calibrator:
        """Fit the terms the rows can inform (the others keep the prior), then cross-validate if asked."""
        if not bucket.index:
            raise AdvisorError("no predictable rows to fit")
        rows = bucket.rows
        bucket, bad = consistent(bucket)
        self.set_aside_ = [(rows[j], why) for j, why in sorted(bad.items())]
        if not bucket.index:
            raise AdvisorError("no rows left to fit: every row contradicts its sweep or its GPUs "
                               f"({self.set_aside_[0][1]})")
        self.refused_ = self.refusals(bucket)
        self.fitted_ = self.informed(bucket)
        self.terms_ = self._solve(bucket, self.fitted_)
        vals = self.terms_.model_dump()
        self.bounds_hit_ = [k for k in self.fitted_ if at_bound(k, vals[k])]
        self.rows_used_ = len(bucket.index)
        self.cv_, self.cv_method_, self.tpot_residual_pct_ = {}, "not run", None
        if self.cv:
            signed, self.cv_method_ = self._cross_validate(bucket, self.fitted_)
            self.cv_ = {m: metric_summary(v) for m, v in signed.items() if v}
            if signed["tpot_ms"]:
                p10, p90 = np.percentile(signed["tpot_ms"], [10, 90])
                self.tpot_residual_pct_ = (round(float(p10), 2), round(float(p90), 2))
        return self

    def predict(self, bucket: Bucket) -> dict[str, np.ndarray]:
        """Predicted ttft_ms, tpot_ms, output_tok_s [N] of the bucket's rows under the fitted terms."""
        return run_bucket(bucket, self.terms_)

    def _prior_res(self, name: str, x: float, x0: float) -> float:
        s = x0 if name.endswith("_us") else 0.0
        return self.prior_weight * (np.log(x + s + 1e-12) - np.log(x0 + s))

    def _solve(self, b: Bucket, active: list[str]) -> Terms:
        """Bounded least squares of the active terms on one bucket (the others stay at the prior)."""
        meas = measured(b)
        base = self.prior.model_dump()
        if not active:
            return self.prior

        def terms_of(x: np.ndarray) -> Terms:
            return Terms(**{**base, **{k: float(v) for k, v in zip(active, x, strict=True)}})

        def residuals(x: np.ndarray) -> np.ndarray:
            parts = self.log_ratios(run_bucket(b, terms_of(x)), meas)
            parts.append(np.array([self._prior_res(k, v, base[k]) for k, v in zip(active, x, strict=True)]))
            return self.finite(parts)

        lo = np.array([BOUNDS[k][0] for k in active])
        hi = np.array([BOUNDS[k][1] for k in active])
        x0 = np.clip([base[k] for k in active], lo + 1e-6 * (hi - lo), hi - 1e-6 * (hi - lo))
        scale = np.maximum(np.abs(x0), 0.01 * (hi - lo))
        return terms_of(self.solve(residuals, x0, [meas], len(active), bounds=(lo, hi), x_scale=scale))

    def _cross_validate(self, b: Bucket, active: list[str]) -> tuple[dict[str, list[float]], str]:
        """Signed % errors per metric of each held-out row, predicted with terms fitted on the other rows."""
        folds, how = _folds(b)
        signed: dict[str, list[float]] = {m: [] for m in METRIC_KEYS}
        meas = measured(b)
        for held in folds:
            train = np.setdiff1d(np.arange(len(b.index)), held)
            terms = self._solve(subset(b, train), active)
            pred = run_bucket(subset(b, held), terms)
            for m in METRIC_KEYS:
                for j, h in enumerate(held):
                    if np.isfinite(meas[m][h]):
                        signed[m].append(float(100 * (pred[m][j] - meas[m][h]) / meas[m][h]))
        return signed, how


def _folds(b: Bucket) -> tuple[list[np.ndarray], str]:
    """Held-out index sets: grouped by model (k = min(5, models)) when >= 3 models, else one row each."""
    models = sorted({r.model for r in b.rows})
    n = len(b.rows)
    if len(models) >= 3:
        k = min(5, len(models))
        fold_of = {m: j % k for j, m in enumerate(models)}
        ids = np.array([fold_of[r.model] for r in b.rows])
        return [np.flatnonzero(ids == j) for j in range(k)], f"{k}-fold grouped by model ({len(models)} models)"
    if n < 2:
        return [], "none (a single row)"
    if n <= LOO_MAX_ROWS:
        return [np.array([j]) for j in range(n)], f"leave-one-row-out ({len(models)} model(s))"
    # many rows of < 3 models: hold out whole serving configurations (model, plan, dtype), 5 folds
    configs = sorted({_config(r) for r in b.rows})
    fold_of = {c: j % 5 for j, c in enumerate(configs)}
    ids = np.array([fold_of[_config(r)] for r in b.rows])
    return ([np.flatnonzero(ids == j) for j in range(min(5, len(configs)))],
            f"{min(5, len(configs))}-fold grouped by configuration ({len(configs)} configurations, "
            f"{len(models)} model(s))")


def _config(r: Measurement) -> str:
    return f"{r.model}|{r.tp}|{r.pp}|{r.dp}|{r.ep}|{r.weight_dtype}"
