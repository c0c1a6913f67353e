"""`advisor calibrate`: fit the efficiency terms of one (hardware, engine) to measured rows, refuse a fit that
informs no term or predicts held-out rows worse than the calibration it would replace (unless forced), write the
calibration file (atomically) and report it: a typed `RefitReport`, rendered by `report/calibration_table.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from advisor.errors import AdvisorError

# Held-out median |error| beyond which a fit is worth a warning: the README's accuracy targets (TPOT <= 15%,
# TTFT <= 25%), tok/s held to the TPOT one.
TARGET_PCT = {"tpot_ms": 15.0, "ttft_ms": 25.0, "output_tok_s": 15.0}


class RowNote(BaseModel):
    """A row left out of the fit (file, 1-based row) and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    row: int
    reason: str


class RefitReport(BaseModel):
    """What `calibrate` fitted and wrote: the terms, which were fitted or kept at their priors (and why), bounds
    hit, held-out errors, the rows used, set aside and rejected, and warnings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output: str
    hardware: str
    engine: str
    terms: dict[str, float]
    fitted: list[str]
    refused: dict[str, str]
    bounds_hit: list[str]
    cv: dict[str, dict[str, int | float]]  # per metric: `report.metric_summary`
    cv_method: str
    tpot_residual_pct: tuple[float, float] | None
    rows_used: int
    rows_set_aside: list[RowNote]
    rows_rejected: list[RowNote]
    files: list[str]
    engine_versions: list[str]
    method: str
    warnings: list[str]
    disaggregated: dict[str, Any] | None = None  # disaggregated rows given: `calibrate/disagg_check.py: fit_check`


def guard(fit: Any, hw: str, engine: str, output: Path) -> tuple[list[str], list[str]]:
    """(reasons not to write the fit, warnings): a fit that informs no term; held-out error worse than the
    calibration it replaces; with nothing to replace, held-out error beyond the README targets."""
    from advisor.calibrate.store import pooled_terms, replaced, worse_metrics
    from advisor.hardware import load_profile

    refuse: list[str] = []
    if not fit.fitted_:
        refuse.append(f"the rows inform no term (all {len(fit.refused_)} kept at their priors: "
                      f"{next(iter(fit.refused_.values()))})")
    for cal, name in replaced(hw, engine, output) if fit.fitted_ else []:
        worse = worse_metrics(fit.cv_, cal.cv)
        if worse:
            refuse.append(f"{'; '.join(worse)}: worse than {name}, which it would replace")
    warn: list[str] = []
    shipped = pooled_terms(load_profile(hw), engine)
    if fit.fitted_ and shipped is not None and shipped[1]["rows"]:  # the shipped terms stay; say if they are better
        worse = worse_metrics(fit.cv_, shipped[1]["cv"])
        if worse:
            warn.append(f"{'; '.join(worse)} of the shipped {hw}/{engine} terms (model held out): "
                        f"--calibration {output} would predict worse than leaving it out")
    warn += [f"held-out median {m} error {s['median_abs_pct']:g}% is beyond the {TARGET_PCT[m]:g}% target"
             for m, s in fit.cv_.items() if s.get("median_abs_pct", 0) > TARGET_PCT.get(m, 100)]
    return refuse, warn


def _rows(files: list[str], hw: str, engine: str, defaults: dict[str, Any] | None
          ) -> tuple[Any, list[RowNote], list[str]]:
    """The (hardware, engine) bucket to fit, the rows rejected (unreadable, or not predictable) and the engine
    versions of the rows used. AdvisorError when no row is usable."""
    from advisor.calibrate.predict_rows import engine_label
    from advisor.calibrate.predict_table import prepare
    from advisor.calibrate.rowtable import read_measurements

    sets = [read_measurements(f, defaults=defaults) for f in files]
    mine = [r for s in sets for r in s.rows if r.hardware == hw and engine_label(r) == engine]
    rejected = [RowNote(file=r.file, row=r.row, reason=r.reason) for s in sets for r in s.rejected]
    preds, buckets = prepare(mine)
    rejected += [RowNote(file=p.row.file, row=p.row.row, reason=p.reason) for p in preds if p.reason]
    bucket = buckets.get((hw, engine))
    if bucket is None:
        first = f" (first: {rejected[0].reason})" if rejected else ""
        raise AdvisorError(f"{', '.join(files)}: no usable rows for {hw}/{engine}: {len(mine)} rows of it, "
                           f"{len(rejected)} rejected{first}")
    versions = sorted({p.row.engine_version for p in preds if p.row.engine_version and not p.reason})
    return bucket, rejected, versions


def refit(files: list[str], hw: str, engine: str, output: Path, defaults: dict[str, Any] | None = None,
          force: bool = False) -> RefitReport:
    """Fit, write `output`, and report it."""
    from advisor.calibrate.disagg_check import fit_check, split_files
    from advisor.calibrate.fit import METHOD, Calibrator
    from advisor.calibrate.store import Calibration, terms_for, write_calibration
    from advisor.hardware import load_profile

    profile = load_profile(hw)
    files, disagg = split_files(files)
    bucket, rejected, versions = _rows(files, profile.id, engine, defaults)
    # the shipped pooled terms of this GPU (or the engine-wide ones) are the prior the rows pull away from:
    # shrinkage, so 5-30 rows move what they measure and keep the rest
    prior, _ = terms_for(profile, engine)
    fit = Calibrator(prior).fit(bucket)
    refuse, warnings = guard(fit, profile.id, engine, output)
    if refuse and not force:
        raise AdvisorError(f"-o {output}: not written: {'; '.join(refuse)} (--force writes it anyway)")
    warnings = [f"written anyway (--force): {r}" for r in refuse] + warnings
    cal = Calibration(hardware=profile.id, engine=engine, terms=fit.terms_, bounds_hit=fit.bounds_hit_,
                      refused=fit.refused_, rows_used=fit.rows_used_, rows_rejected=len(rejected),
                      files=[Path(f).name for f in files], engine_versions=versions, cv=fit.cv_,
                      tpot_residual_pct=fit.tpot_residual_pct_, method=f"{METHOD}; CV: {fit.cv_method_}")
    write_calibration(cal, output)
    return RefitReport(
        output=str(output), hardware=profile.id, engine=engine, terms=fit.terms_.model_dump(), fitted=fit.fitted_,
        refused=fit.refused_, bounds_hit=fit.bounds_hit_, cv=fit.cv_, cv_method=fit.cv_method_,
        tpot_residual_pct=fit.tpot_residual_pct_, rows_used=fit.rows_used_,
        rows_set_aside=[RowNote(file=r.file, row=r.row, reason=why) for r, why in fit.set_aside_],
        rows_rejected=rejected, files=list(files), engine_versions=versions, method=cal.method, warnings=warnings,
        disaggregated=fit_check(disagg, profile, engine, prior, fit.terms_) if disagg else None)
