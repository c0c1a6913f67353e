"""Fit the efficiency terms (advisor.cost.terms) of one (hardware, engine) to measured rows.

Method: scipy.optimize.least_squares (method "trf", bounds `terms.BOUNDS`) on the log-residuals
log(predicted / measured) of TTFT, TPOT and output tok/s (Cauchy loss, tighter on TTFT than on the rest:
`calibrate/loss.py`), plus one soft-prior residual per fitted term,
PRIOR_WEIGHT * (log(x + s) - log(x0 + s)), pulling it toward its `Terms()` default (s = 0 for efficiencies,
s = x0 for the overheads so that they may reach 0). A term the rows cannot inform is refused and kept at
its prior. Cross-validation: k-fold grouped by model (k = min(5, models)) when >= 3 models, otherwise
leave-one-row-out; its signed errors give `cv_` and `tpot_residual_pct_`. `Calibrator` has the scikit-learn
estimator shape: options in the constructor, `fit(bucket)` learns the attributes ending in `_`, `predict(bucket)`.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import NoReturn

import numpy as np

from advisor.calibrate.consistency import beyond_peak, inconsistent
from advisor.calibrate.loss import F_SCALE, heavy_tailed, robust_loss
from advisor.calibrate.loss import NAME as LOSS_NAME
from advisor.calibrate.measurements import Measurement
from advisor.calibrate.predict_rows import METRIC_KEYS, Bucket, run_bucket
from advisor.calibrate.report import metric_summary
from advisor.cost.features import Features
from advisor.cost.terms import BOUNDS, Terms, at_bound
from advisor.errors import AdvisorError

PRIOR_WEIGHT = 0.3  # one prior residual ~ a 30% error on one measured value; design choice (issue 6)
NAMES = tuple(BOUNDS)
MIN_ROWS = {"bw_scale": 2, "step_overhead_us": 3, "layer_overhead_us": 3,
            "comm_latency_scale": 3, "request_overhead_us": 3, "bench_wave_share": 3}
LOO_MAX_ROWS = 40  # above this, leave-one-row-out costs one fit per row; folds of configurations instead
METHOD = ("scipy.optimize.least_squares(method='trf', bounds=terms.BOUNDS) on log(pred/meas) of ttft_ms, "
          f"tpot_ms, output_tok_s, loss {LOSS_NAME}; soft log-priors toward Terms() defaults, "
          f"weight {PRIOR_WEIGHT}")


class Calibrator:
    """Fits the terms of one (hardware, engine) bucket, scikit-learn style (method: the module docstring).

    `Calibrator(prior, cv=True).fit(bucket)` sets `terms_`, `fitted_`, `refused_`, `bounds_hit_`, `rows_used_`,
    `set_aside_` (the rows of sweeps that contradict themselves, left out, with the reason:
    `calibrate/consistency.py`),
    `cv_` (per-metric summaries of held-out errors), `cv_method_` and `tpot_residual_pct_` and returns itself;
    `predict(bucket)` gives ttft_ms, tpot_ms, output_tok_s [N] under `terms_`."""

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
        self.refused_ = refusals(bucket)
        self.fitted_ = [k for k in NAMES if k not in self.refused_]
        self.terms_ = _solve(bucket, self.fitted_, self.prior)
        vals = self.terms_.model_dump()
        self.bounds_hit_ = [k for k in self.fitted_ if at_bound(k, vals[k])]
        self.rows_used_ = len(bucket.index)
        self.cv_, self.cv_method_, self.tpot_residual_pct_ = {}, "not run", None
        if self.cv:
            signed, self.cv_method_ = cross_validate(bucket, self.fitted_, self.prior)
            self.cv_ = {m: metric_summary(v) for m, v in signed.items() if v}
            if signed["tpot_ms"]:
                p10, p90 = np.percentile(signed["tpot_ms"], [10, 90])
                self.tpot_residual_pct_ = (round(float(p10), 2), round(float(p90), 2))
        return self

    def predict(self, bucket: Bucket) -> dict[str, np.ndarray]:
        """Predicted ttft_ms, tpot_ms, output_tok_s [N] of the bucket's rows under the fitted terms."""
        return run_bucket(bucket, self.terms_)

    def __getattr__(self, name: str) -> NoReturn:
        # only reached when normal lookup fails: a learned attribute before fit(), or a typo
        if name.endswith("_") and not name.startswith("_"):
            raise AttributeError(f"Calibrator.{name} does not exist before fit(bucket): call fit first")
        raise AttributeError(f"'Calibrator' object has no attribute {name!r}")


def subset(b: Bucket, keep: np.ndarray) -> Bucket:
    """The bucket restricted to positions `keep` (bool or int index)."""
    pos = np.arange(len(b.index))[keep]
    feats = Features(**{f.name: getattr(b.features, f.name)[pos] for f in fields(Features)})
    return replace(b, index=[b.index[j] for j in pos], rows=[b.rows[j] for j in pos], features=feats,
                   concurrency=b.concurrency[pos], input_len=b.input_len[pos], output_len=b.output_len[pos],
                   fixed_lengths=b.fixed_lengths[pos], options=b.options[pos])


def consistent(b: Bucket) -> tuple[Bucket, dict[int, str]]:
    """The bucket without the rows of sweeps that contradict themselves and the rows that need more than their
    GPUs' peak (`calibrate/consistency.py`), and those rows (positions in the bucket) with the reason; what a fit
    learns from."""
    bad = {**beyond_peak(b.rows, b.features, b.hw, b.input_len, b.output_len), **inconsistent(b.rows)}
    return (subset(b, np.array([j not in bad for j in range(len(b.rows))], bool)) if bad else b), bad


def measured(b: Bucket) -> dict[str, np.ndarray]:
    """Measured values [N] per metric of a bucket's rows (nan where not measured)."""
    return {m: np.array([getattr(r, m) or np.nan for r in b.rows], float) for m in METRIC_KEYS}


def refusals(b: Bucket) -> dict[str, str]:
    """Terms the bucket's rows cannot inform, with the reason (they keep their prior)."""
    is_decode = np.array([bool(r.tpot_ms or r.output_tok_s) for r in b.rows])
    decode = [r for r, d in zip(b.rows, is_decode, strict=True) if d]
    counts = {"bw_scale": len(decode), "step_overhead_us": len(decode),
              "layer_overhead_us": len(decode),
              "comm_latency_scale": sum(1 for r in decode if r.tp * r.dp > 1),
              "request_overhead_us": sum(1 for r in b.rows if r.ttft_ms),
              "bench_wave_share": sum(1 for r in b.rows if r.ttft_ms and r.concurrency > 1)}
    what = {"bw_scale": "rows with TPOT or tok/s", "step_overhead_us": "rows with TPOT or tok/s",
            "layer_overhead_us": "rows with TPOT or tok/s",
            "comm_latency_scale": "rows with TP x DP > 1 and TPOT or tok/s",
            "request_overhead_us": "rows with TTFT",
            "bench_wave_share": "rows with TTFT at concurrency > 1"}
    out = {k: f"only {counts[k]} {what[k] if counts[k] != 1 else what[k].replace('rows', 'row', 1)} "
              f"(need {MIN_ROWS[k]}); kept at prior"
           for k in NAMES if counts[k] < MIN_ROWS[k]}
    if "layer_overhead_us" not in out and len(set(b.features.layers[is_decode])) < 2:
        out["layer_overhead_us"] = "all decode rows have the same layer count (cannot separate it from the " \
                                   "per-step overhead); kept at prior"
    return out


def _prior_res(name: str, x: float, x0: float) -> float:
    s = x0 if name.endswith("_us") else 0.0
    return PRIOR_WEIGHT * (np.log(x + s + 1e-12) - np.log(x0 + s))


def _solve(b: Bucket, active: list[str], prior: Terms) -> Terms:
    """Bounded least squares of the active terms on one bucket (the others stay at the prior)."""
    from scipy.optimize import least_squares

    meas = measured(b)
    base = prior.model_dump()
    if not active:
        return prior

    def terms_of(x: np.ndarray) -> Terms:
        return Terms(**{**base, **{k: float(v) for k, v in zip(active, x, strict=True)}})

    def residuals(x: np.ndarray) -> np.ndarray:
        pred = run_bucket(b, terms_of(x))
        parts = []
        for m in METRIC_KEYS:
            ok = np.isfinite(meas[m])
            p = np.clip(pred[m][ok], 1e-9, 1e12)
            parts.append(np.log(p / meas[m][ok]))
        parts.append(np.array([_prior_res(k, v, base[k]) for k, v in zip(active, x, strict=True)]))
        r = np.concatenate(parts)
        return np.where(np.isfinite(r), r, 30.0)

    lo = np.array([BOUNDS[k][0] for k in active])
    hi = np.array([BOUNDS[k][1] for k in active])
    x0 = np.clip([base[k] for k in active], lo + 1e-6 * (hi - lo), hi - 1e-6 * (hi - lo))
    scale = np.maximum(np.abs(x0), 0.01 * (hi - lo))
    sol = least_squares(residuals, x0, bounds=(lo, hi), method="trf", x_scale=scale, diff_step=1e-3,
                        loss=robust_loss(heavy_tailed([meas], len(active))), f_scale=F_SCALE, max_nfev=200)
    return terms_of(sol.x)


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


def cross_validate(b: Bucket, active: list[str], prior: Terms) -> tuple[dict[str, list[float]], str]:
    """Signed % errors per metric of each held-out row, predicted with terms fitted on the other rows."""
    folds, how = _folds(b)
    signed: dict[str, list[float]] = {m: [] for m in METRIC_KEYS}
    meas = measured(b)
    for held in folds:
        train = np.setdiff1d(np.arange(len(b.index)), held)
        terms = _solve(subset(b, train), active, prior)
        pred = run_bucket(subset(b, held), terms)
        for m in METRIC_KEYS:
            for j, h in enumerate(held):
                if np.isfinite(meas[m][h]):
                    signed[m].append(float(100 * (pred[m][j] - meas[m][h]) / meas[m][h]))
    return signed, how
