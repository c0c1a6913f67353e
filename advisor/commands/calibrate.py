"""`advisor calibrate MEASUREMENTS... --hw ID [--engine] -o FILE`: fit the efficiency terms of one
(hardware, engine) to measured rows and write a calibration file (atomically); `calibrate/refit.py` does it."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.commands import options as opt
from advisor.engines import DEFAULT_ENGINE, Engine


def calibrate(
    measurements: opt.Measurements,
    hw: Annotated[str, typer.Option("--hw", help="Hardware profile id the rows were measured on.")],
    output: opt.OutputFile,
    engine: Annotated[Engine, typer.Option("--engine", help="Engine the rows were measured with.")] = DEFAULT_ENGINE,
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
    from advisor.calibrate.refit import refit
    from advisor.report.calibration_table import calibration_tables
    from advisor.report.sink import emit, warn

    defaults = opt.measurement_defaults(model=model, hardware=hw, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep,
                                        concurrency=concurrency, weight_dtype=weight_dtype)
    opt.output_folder("-o", output)
    report = refit(measurements, hw, engine, output, defaults, force)
    for line in report.warnings:
        warn(line)
    emit(report, json_out, calibration_tables)
