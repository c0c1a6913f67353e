"""Command-line entry point. Each command group lives in `advisor/commands/`; heavy imports
(scipy, matplotlib, huggingface_hub) happen inside the commands that need them."""

from __future__ import annotations

import os
import sys

import typer

from advisor.errors import AdvisorError

app = typer.Typer(
    name="advisor",
    help="Which LLM to serve on this box, with which parallel plan, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


@app.callback()
def _root() -> None:
    """Which LLM to serve on this box, with which parallel plan, and why."""


def _register() -> None:
    from advisor.commands import register_all

    register_all(app)


_register()


def main() -> None:
    """Run the CLI; AdvisorError becomes one line on stderr and exit 2 (ADVISOR_DEBUG=1 shows a traceback)."""
    try:
        app(standalone_mode=False)
    except AdvisorError as err:
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        print(f"advisor: error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as err:  # click usage errors and friends
        import click

        if isinstance(err, click.exceptions.Exit):
            sys.exit(err.exit_code)
        if isinstance(err, click.ClickException):
            print(f"advisor: error: {err.format_message()}", file=sys.stderr)
            sys.exit(2)
        if isinstance(err, click.exceptions.Abort):
            sys.exit(1)
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        print(f"advisor: internal error: {type(err).__name__}: {err} (set ADVISOR_DEBUG=1 for a traceback)",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
