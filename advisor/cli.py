"""Command-line entry point. Each command group lives in `advisor/commands/`; heavy imports
(scipy, matplotlib, huggingface_hub) happen inside the commands that need them."""

from __future__ import annotations

import os
import sys

import typer

from advisor import __version__
from advisor.errors import AdvisorError

app = typer.Typer(
    name="advisor",
    help="Which LLM to serve on this box, with which parallel plan, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from advisor.report.sink import line

        line(f"advisor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Which LLM to serve on this box, with which parallel plan, and why."""


def _register() -> None:
    from advisor.commands import register_all

    register_all(app)


_register()


def main() -> None:
    """Run the CLI. Usage errors: click's usage message and exit 2; AdvisorError: one line on stderr and exit 2
    (ADVISOR_DEBUG=1 shows a traceback); Ctrl-C: exit 130."""
    try:
        code = app(standalone_mode=False, prog_name="advisor")
    except AdvisorError as err:
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        print(f"advisor: error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as err:
        # typer ships its own click (`typer._click`), so usage errors are matched by what they offer
        exit_code = getattr(err, "exit_code", None)
        if hasattr(err, "show") and isinstance(exit_code, int):
            err.show()
            sys.exit(exit_code)
        if type(err).__name__ == "Abort":
            sys.exit(130)
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        print(f"advisor: internal error: {type(err).__name__}: {err} (set ADVISOR_DEBUG=1 for a traceback)",
              file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
