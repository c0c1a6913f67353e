"""Fit the efficiency terms (advisor.cost.terms) of one (hardware, engine) to measured rows.

Method: scipy.optimize.least_squares (method "trf", bounds `terms.BOUNDS`) on the log-residuals
log(predicted / measured) of TTFT, TPOT and output tok/s, plus one soft-prior residual per fitted term,
PRIOR_WEIGHT * (log(x + s) - log(x0 + s)), pulling it toward its `Terms()` default (s = 0 for efficiencies,
s = x0 for the overheads so that they may reach 0). A term the rows cannot inform is refused and kept at
its prior. Cross-validation: k-fold grouped by model (k = min(5, models)) when >= 3 models, otherwise
leave-one-row-out; its signed errors give `cv` and `tpot_residual_pct`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from advisor.calibrate.predict_rows import METRIC_KEYS, Bucket, RowPrediction, run_bucket
from advisor.calibrate.report import metric_summary
from advisor.cost.features import Features
from advisor.cost.terms import BOUNDS, Terms
from advisor.errors import AdvisorError

PRIOR_WEIGHT = 0.3  # one prior residual ~ a 30% error on one measured value; design choice (issue 6)
NAMES = tuple(BOUNDS)
MIN_ROWS = {"mem_bw_eff": 2, "step_overhead_us": 3, "layer_overhead_us": 3, "flops_eff": 3,
            "comm_latency_scale": 3, "request_overhead_us": 3,
            "prefill_queue_frac": 3}
LOO_MAX_ROWS = 40  # above this, leave-one-row-out costs one fit per row; folds of configurations instead
LOSS = "soft_l1"  # robust: a few rows the physics misses (queueing, outliers) do not drag every term
F_SCALE = 0.25  # residual (log ratio) beyond which the loss grows linearly: ~28% error
METHOD = ("scipy.optimize.least_squares(method='trf', bounds=terms.BOUNDS) on log(pred/meas) of ttft_ms, "
          f"tpot_ms, output_tok_s, loss {LOSS} (f_scale {F_SCALE}); soft log-priors toward Terms() defaults, "
          f"weight {PRIOR_WEIGHT}")


@dataclass
class FitResult:
    terms: Terms
    fitted: list[str]
    refused: dict[str, str]
    bounds_hit: list[str]
    cv: dict[str, dict[str, float]]
    cv_method: str
    tpot_residual_pct: tuple[float, float] | None
    rows_used: int
    cost: float


def subset(b: Bucket, keep: np.ndarray) -> Bucket:
    """The bucket restricted to positions `keep` (bool or int index)."""
    feats = Features(**{f.name: getattr(b.features, f.name)[keep] for f in fields(Features)})
    return replace(b, index=list(np.asarray(b.index)[keep]), features=feats, concurrency=b.concurrency[keep],
                   input_len=b.input_len[keep], output_len=b.output_len[keep])


def measured(preds: list[RowPrediction], b: Bucket) -> dict[str, np.ndarray]:
    """Measured values [N] per metric of a bucket's rows (nan where not measured)."""
    return {m: np.array([getattr(preds[i].row, m) or np.nan for i in b.index], float) for m in METRIC_KEYS}


def refusals(preds: list[RowPrediction], b: Bucket) -> dict[str, str]:
    """Terms the bucket's rows cannot inform, with the reason (they keep their prior)."""
    rows = [preds[i] for i in b.index]
    decode = [p for p in rows if p.row.tpot_ms or p.row.output_tok_s]
    counts = {"mem_bw_eff": len(decode), "step_overhead_us": len(decode),
              "layer_overhead_us": len(decode), "flops_eff": sum(1 for p in rows if p.row.ttft_ms),
              "comm_latency_scale": sum(1 for p in decode if p.tp_gt1),
              "request_overhead_us": sum(1 for p in rows if p.row.ttft_ms),
              "prefill_queue_frac": sum(1 for p in rows if p.row.ttft_ms and p.row.concurrency > 1)}
    what = {"mem_bw_eff": "rows with TPOT or tok/s", "step_overhead_us": "rows with TPOT or tok/s",
            "layer_overhead_us": "rows with TPOT or tok/s", "flops_eff": "rows with TTFT",
            "comm_latency_scale": "rows with TP x DP > 1 and TPOT or tok/s",
            "request_overhead_us": "rows with TTFT",
            "prefill_queue_frac": "rows with TTFT at concurrency > 1"}
    out = {k: f"only {counts[k]} {what[k]} (need {MIN_ROWS[k]}); kept at prior"
           for k in NAMES if counts[k] < MIN_ROWS[k]}
    if "layer_overhead_us" not in out and len({p.layers for p in decode}) < 2:
        out["layer_overhead_us"] = "all decode rows have the same layer count (cannot separate it from the " \
                                   "per-step overhead); kept at prior"
    return out


def _prior_res(name: str, x: float, x0: float) -> float:
    s = x0 if name.endswith("_us") else 0.0
    return PRIOR_WEIGHT * (np.log(x + s + 1e-12) - np.log(x0 + s))


def _solve(preds: list[RowPrediction], b: Bucket, active: list[str], prior: Terms) -> tuple[Terms, float]:
    """Bounded least squares of the active terms on one bucket; returns the terms and the final cost."""
    from scipy.optimize import least_squares

    meas = measured(preds, b)
    base = prior.model_dump()
    if not active:
        return prior, 0.0

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
    sol = least_squares(residuals, x0, bounds=(lo, hi), method="trf", x_scale=scale, diff_step=1e-3, loss=LOSS,
                        f_scale=F_SCALE, max_nfev=200)
    return terms_of(sol.x), float(sol.cost)


def _folds(preds: list[RowPrediction], b: Bucket) -> tuple[list[np.ndarray], str]:
    """Held-out index sets: grouped by model (k = min(5, models)) when >= 3 models, else one row each."""
    models = sorted({preds[i].row.model for i in b.index})
    n = len(b.index)
    if len(models) >= 3:
        k = min(5, len(models))
        fold_of = {m: j % k for j, m in enumerate(models)}
        ids = np.array([fold_of[preds[i].row.model] for i in b.index])
        return [np.flatnonzero(ids == j) for j in range(k)], f"{k}-fold grouped by model ({len(models)} models)"
    if n < 2:
        return [], "none (a single row)"
    if n <= LOO_MAX_ROWS:
        return [np.array([j]) for j in range(n)], f"leave-one-row-out ({len(models)} model(s))"
    # many rows of < 3 models: hold out whole serving configurations (model, plan, dtype), 5 folds
    configs = sorted({_config(preds[i]) for i in b.index})
    fold_of = {c: j % 5 for j, c in enumerate(configs)}
    ids = np.array([fold_of[_config(preds[i])] for i in b.index])
    return ([np.flatnonzero(ids == j) for j in range(min(5, len(configs)))],
            f"{min(5, len(configs))}-fold grouped by configuration ({len(configs)} configurations, "
            f"{len(models)} model(s))")


def _config(p: RowPrediction) -> str:
    r = p.row
    return f"{r.model}|{r.tp}|{r.pp}|{r.dp}|{r.ep}|{r.weight_dtype}"


def cross_validate(preds: list[RowPrediction], b: Bucket, active: list[str],
                   prior: Terms) -> tuple[dict[str, list[float]], str]:
    """Signed % errors per metric of each held-out row, predicted with terms fitted on the other rows."""
    folds, how = _folds(preds, b)
    signed: dict[str, list[float]] = {m: [] for m in METRIC_KEYS}
    meas = measured(preds, b)
    for held in folds:
        train = np.setdiff1d(np.arange(len(b.index)), held)
        terms, _ = _solve(preds, subset(b, train), active, prior)
        pred = run_bucket(subset(b, held), terms)
        for m in METRIC_KEYS:
            for j, h in enumerate(held):
                if np.isfinite(meas[m][h]):
                    signed[m].append(float(100 * (pred[m][j] - meas[m][h]) / meas[m][h]))
    return signed, how


def fit_bucket(preds: list[RowPrediction], b: Bucket, prior: Terms | None = None, cv: bool = True) -> FitResult:
    """Fit one (hardware, engine) bucket; refused terms stay at the prior; optional cross-validation."""
    prior = prior or Terms()
    if not b.index:
        raise AdvisorError("no predictable rows to fit")
    refused = refusals(preds, b)
    active = [k for k in NAMES if k not in refused]
    terms, cost = _solve(preds, b, active, prior)
    vals = terms.model_dump()
    hit = [k for k in active if min(vals[k] - BOUNDS[k][0], BOUNDS[k][1] - vals[k])
           <= 0.01 * (BOUNDS[k][1] - BOUNDS[k][0])]
    summary: dict[str, dict[str, float]] = {}
    residual: tuple[float, float] | None = None
    how = "not run"
    if cv:
        signed, how = cross_validate(preds, b, active, prior)
        summary = {m: metric_summary(v) for m, v in signed.items() if v}
        if signed["tpot_ms"]:
            p10, p90 = np.percentile(signed["tpot_ms"], [10, 90])
            residual = (round(float(p10), 2), round(float(p90), 2))
    return FitResult(terms=terms, fitted=active, refused=refused, bounds_hit=hit, cv=summary, cv_method=how,
                     tpot_residual_pct=residual, rows_used=len(b.index), cost=cost)


def describe(r: FitResult) -> dict[str, Any]:
    """JSON-ready view of a fit (for `calibrate --json`)."""
    return {"terms": r.terms.model_dump(), "fitted": r.fitted, "refused": r.refused, "bounds_hit": r.bounds_hit,
            "cv": r.cv, "cv_method": r.cv_method, "tpot_residual_pct": r.tpot_residual_pct,
            "rows_used": r.rows_used}
