"""`advisor calibrate MEASUREMENTS... --hw ID [--engine] -o FILE`: fit the efficiency terms of one
(hardware, engine) to measured rows and write a calibration file (atomically)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from advisor.commands import options as opt
from advisor.commands.output import emit
from advisor.engines import Engine


def calibrate(
    measurements: opt.Measurements,
    hw: Annotated[str, typer.Option("--hw", help="Hardware profile id the rows were measured on.")],
    output: opt.OutputFile,
    engine: Annotated[Engine, typer.Option("--engine", help="Engine the rows were measured with.")] = "vllm",
    json_out: opt.Json = False, model: opt.CondModel = None, tp: opt.Tp = None, pp: opt.Pp = None,
    dp: opt.Dp = None, ep: opt.Ep = None, concurrency: opt.CondConcurrency = None,
    weight_dtype: opt.WeightDtypeOpt = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Write the fit even when it informs no term or its held-out error is worse than the "
                        "calibration it replaces.")] = False,
) -> None:
    """Fit bounded efficiency terms to measured rows; report bounds hit, CV error, rows used/rejected.
    --hw/--engine select the rows and also fill them in for files that do not name them. A fit that informs no
    term, or whose held-out error is worse than the calibration it replaces (the file at -o, else the shipped
    one), is not written unless --force."""
    defaults = opt.measurement_defaults(model=model, hardware=hw, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep,
                                        concurrency=concurrency, weight_dtype=weight_dtype)
    doc = calibrate_doc(measurements, hw, engine, output, defaults, force)
    for line in doc["warnings"]:
        print(f"advisor: warning: {line}", file=sys.stderr)
    emit(doc, json_out, _print)


# Held-out median |error| beyond which a fit is worth a warning: the README's accuracy targets (TPOT <= 15%,
# TTFT <= 25%), tok/s held to the TPOT one.
TARGET_PCT = {"tpot_ms": 15.0, "ttft_ms": 25.0, "output_tok_s": 15.0}


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


def calibrate_doc(files: list[str], hw: str, engine: str, output: Path,
                  defaults: dict[str, Any] | None = None, force: bool = False) -> dict[str, Any]:
    """Fit, write `output`, and return the JSON report (terms, refused, bounds hit, cv, rows used/rejected)."""
    from advisor.calibrate.fit import METHOD, Calibrator
    from advisor.calibrate.predict_rows import engine_label
    from advisor.calibrate.predict_table import prepare
    from advisor.calibrate.rowtable import read_measurements
    from advisor.calibrate.store import Calibration, terms_for, write_calibration
    from advisor.errors import AdvisorError
    from advisor.hardware import load_profile

    profile = load_profile(hw)
    sets = [read_measurements(f, defaults=defaults) for f in files]
    mine = [r for s in sets for r in s.rows if r.hardware == profile.id and engine_label(r) == engine]
    rejected = [{"file": r.file, "row": r.row, "reason": r.reason} for s in sets for r in s.rejected]
    preds, buckets = prepare(mine)
    rejected += [{"file": p.row.file, "row": p.row.row, "reason": p.reason} for p in preds if p.reason]
    bucket = buckets.get((profile.id, engine))
    if bucket is None:
        first = f" (first: {rejected[0]['reason']})" if rejected else ""
        raise AdvisorError(f"{', '.join(files)}: no usable rows for {profile.id}/{engine}: {len(mine)} rows of it, "
                           f"{len(rejected)} rejected{first}")
    # the shipped pooled terms of this GPU (or the engine-wide ones) are the prior the rows pull away from:
    # shrinkage, so 5-30 rows move what they measure and keep the rest
    prior, _ = terms_for(profile, engine)
    fit = Calibrator(prior).fit(bucket)
    refuse, warnings = guard(fit, profile.id, engine, output)
    if refuse and not force:
        raise AdvisorError(f"-o {output}: not written: {'; '.join(refuse)} (--force writes it anyway)")
    warnings = [f"written anyway (--force): {r}" for r in refuse] + warnings
    versions = sorted({p.row.engine_version for p in preds if p.row.engine_version and not p.reason})
    cal = Calibration(hardware=profile.id, engine=engine, terms=fit.terms_, bounds_hit=fit.bounds_hit_,
                      refused=fit.refused_, rows_used=fit.rows_used_, rows_rejected=len(rejected),
                      files=[Path(f).name for f in files], engine_versions=versions, cv=fit.cv_,
                      tpot_residual_pct=fit.tpot_residual_pct_, method=f"{METHOD}; CV: {fit.cv_method_}")
    write_calibration(cal, output)
    return {"output": str(output), "hardware": profile.id, "engine": engine, "terms": fit.terms_.model_dump(),
            "fitted": fit.fitted_, "refused": fit.refused_, "bounds_hit": fit.bounds_hit_, "cv": fit.cv_,
            "cv_method": fit.cv_method_, "tpot_residual_pct": fit.tpot_residual_pct_, "rows_used": fit.rows_used_,
            "rows_set_aside": [{"file": r.file, "row": r.row, "reason": why} for r, why in fit.set_aside_],
            "rows_rejected": rejected, "files": list(files), "engine_versions": versions, "method": cal.method,
            "warnings": warnings}


def _print(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from advisor.report.units import num, plural

    console = Console()
    t = Table(title=f"Calibration {doc['hardware']}/{doc['engine']} -> {doc['output']} "
                    f"({plural(doc['rows_used'], 'row')})")
    for col in ("term", "value", "note"):
        t.add_column(col)
    for k, v in doc["terms"].items():
        note = doc["refused"].get(k) or ("bound hit" if k in doc["bounds_hit"] else "fitted")
        t.add_row(k, num(v), note)
    console.print(t)
    c = Table(title=f"Cross-validated |error| ({doc['cv_method']})")
    for col in ("metric", "n", "median %", "p90 %"):
        c.add_column(col)
    for m, s in doc["cv"].items():
        c.add_row(m, str(s["n"]), str(s.get("median_abs_pct", "-")), str(s.get("p90_abs_pct", "-")))
    console.print(c)
    if doc["rows_set_aside"]:
        console.print(f"rows set aside (their sweep contradicts itself, or they need more than the GPUs' peak): "
                      f"{len(doc['rows_set_aside'])}")
        for why in sorted({r["reason"] for r in doc["rows_set_aside"]}):
            console.print(f"  {why}")
    console.print(f"rows rejected: {len(doc['rows_rejected'])}")
    for r in doc["rows_rejected"][:20]:
        console.print(f"  {Path(r['file']).name} row {r['row']}: {r['reason']}")
