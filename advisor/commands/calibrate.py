"""`advisor calibrate MEASUREMENTS... --hw ID [--engine] -o FILE`: fit the efficiency terms of one
(hardware, engine) to measured rows and write a calibration file (atomically)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from advisor.commands import options as opt
from advisor.commands.output import emit
from advisor.engines import MeasuredEngine


def calibrate(
    measurements: opt.Measurements,
    hw: Annotated[str, typer.Option("--hw", help="Hardware profile id the rows were measured on.")],
    output: opt.OutputFile,
    engine: Annotated[MeasuredEngine, typer.Option("--engine", help="Engine the rows were measured with.")] = "vllm",
    json_out: opt.Json = False, model: opt.CondModel = None, tp: opt.Tp = None, pp: opt.Pp = None,
    dp: opt.Dp = None, ep: opt.Ep = None, concurrency: opt.CondConcurrency = None,
    weight_dtype: opt.WeightDtypeOpt = None,
) -> None:
    """Fit bounded efficiency terms to measured rows; report bounds hit, CV error, rows used/rejected.
    --hw/--engine select the rows and also fill them in for files that do not name them."""
    defaults = opt.measurement_defaults(model=model, hardware=hw, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep,
                                        concurrency=concurrency, weight_dtype=weight_dtype)
    emit(calibrate_doc(measurements, hw, engine, output, defaults), json_out, _print)


def calibrate_doc(files: list[str], hw: str, engine: str, output: Path,
                  defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fit, write `output`, and return the JSON report (terms, refused, bounds hit, cv, rows used/rejected)."""
    from advisor.calibrate.fit import METHOD, Calibrator
    from advisor.calibrate.measurements import read_measurements
    from advisor.calibrate.predict_rows import engine_label, prepare
    from advisor.calibrate.store import Calibration, write_calibration
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
    fit = Calibrator().fit(bucket)
    versions = sorted({p.row.engine_version for p in preds if p.row.engine_version and not p.reason})
    cal = Calibration(hardware=profile.id, engine=engine, terms=fit.terms_, bounds_hit=fit.bounds_hit_,
                      refused=fit.refused_, rows_used=fit.rows_used_, rows_rejected=len(rejected),
                      files=[Path(f).name for f in files], engine_versions=versions, cv=fit.cv_,
                      tpot_residual_pct=fit.tpot_residual_pct_, method=f"{METHOD}; CV: {fit.cv_method_}")
    write_calibration(cal, output)
    return {"output": str(output), "hardware": profile.id, "engine": engine, "terms": fit.terms_.model_dump(),
            "fitted": fit.fitted_, "refused": fit.refused_, "bounds_hit": fit.bounds_hit_, "cv": fit.cv_,
            "cv_method": fit.cv_method_, "tpot_residual_pct": fit.tpot_residual_pct_, "rows_used": fit.rows_used_,
            "rows_rejected": rejected, "files": list(files), "engine_versions": versions, "method": cal.method}


def _print(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title=f"Calibration {doc['hardware']}/{doc['engine']} -> {doc['output']} ({doc['rows_used']} rows)")
    for col in ("term", "value", "note"):
        t.add_column(col)
    for k, v in doc["terms"].items():
        note = doc["refused"].get(k) or ("bound hit" if k in doc["bounds_hit"] else "fitted")
        t.add_row(k, f"{v:.4g}", note)
    console.print(t)
    c = Table(title=f"Cross-validated |error| ({doc['cv_method']})")
    for col in ("metric", "n", "median %", "p90 %"):
        c.add_column(col)
    for m, s in doc["cv"].items():
        c.add_row(m, str(s["n"]), str(s.get("median_abs_pct", "-")), str(s.get("p90_abs_pct", "-")))
    console.print(c)
    console.print(f"rows rejected: {len(doc['rows_rejected'])}")
    for r in doc["rows_rejected"][:20]:
        console.print(f"  {Path(r['file']).name} row {r['row']}: {r['reason']}")
