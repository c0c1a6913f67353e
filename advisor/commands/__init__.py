"""One module per command group: each parses its flags, calls `advisor/decide/` (or `advisor/calibrate/` for check
and calibrate) for a typed result and hands it to `advisor/report/`. `register_all` attaches them to the typer app
(an import error is an error, never a silently missing command)."""

from __future__ import annotations

import typer


def register_all(app: typer.Typer) -> None:
    from advisor.commands import calibrate, check, fit, hw, inspect, pareto, predict, rank

    for command in (inspect.inspect, fit.fit, predict.predict, rank.rank, pareto.pareto, check.check,
                    calibrate.calibrate):
        app.command()(command)
    app.add_typer(hw.hw_app, name="hw")
