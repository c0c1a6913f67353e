"""One module per command group; `register_all` attaches them to the typer app."""

from __future__ import annotations

import importlib

import typer

# module name -> how it attaches (each module exposes `register(app)`)
_MODULES = ["inspect", "hw", "fit", "predict", "rank", "check", "calibrate"]


def register_all(app: typer.Typer) -> None:
    for name in _MODULES:
        try:
            mod = importlib.import_module(f"advisor.commands.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"advisor.commands.{name}":
                continue  # command not written yet
            raise
        mod.register(app)
