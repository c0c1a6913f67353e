"""Command-line entry point. Each command group lives in `advisor/commands/`; heavy imports
(scipy, matplotlib, huggingface_hub) happen inside the commands that need them."""

from __future__ import annotations

import sys

try:  # Ctrl-C while the CLI loads (typer, the command modules): exit 130 as during a command, no traceback
    import io
    import math
    import os
    from collections.abc import Callable
    from typing import Any

    import typer
    import typer.main

    from advisor import __version__
    from advisor.errors import AdvisorError
    from advisor.text import printable
except KeyboardInterrupt:
    sys.exit(130)

# Numbers no option means: a count beyond a signed 32-bit int (users, tokens, GPUs), or a float beyond 1e9 (ms,
# USD per GPU-hour, scores, shares); a non-finite float (inf, nan) never. A usage error naming the flag.
INT_LIMIT = 2**31 - 1
FLOAT_LIMIT = 1e9

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


try:
    _register()
except KeyboardInterrupt:
    sys.exit(130)


def _flag(param: Any) -> str:
    """How the user wrote the parameter: its long option (`--concurrency`), else its name."""
    opts = sorted(getattr(param, "opts", []) or [], key=len)
    return opts[-1] if opts else str(param.name).upper()


def number_checked(callback: Callable[..., Any] | None) -> Callable[..., Any]:
    """A parameter callback that refuses a non-finite or absurd number (`INT_LIMIT`, `FLOAT_LIMIT`) in the value
    (or in each value of a repeated option) with one line naming the flag, then runs `callback`."""

    def check(ctx: Any, param: Any, value: Any) -> Any:
        for v in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if isinstance(v, float) and not math.isfinite(v):
                raise AdvisorError(f"{_flag(param)}: {v} is not a finite number")
            limit = INT_LIMIT if isinstance(v, int) else FLOAT_LIMIT
            if abs(v) > limit:
                shown = f"{v:,}" if isinstance(v, int) and v < 10**21 else f"{v:.3g}"
                raise AdvisorError(f"{_flag(param)}: {shown} is beyond any sensible value (at most {limit:,.0f} in "
                                   "size)")
        return callback(ctx, param, value) if callback is not None else value

    check.number_checked = True  # type: ignore[attr-defined]
    return check


def _harden(command: Any) -> Any:
    """Every parameter of `command` and its subcommands checked by `number_checked` (once: a tree handed back
    again keeps its checks)."""
    for param in command.params:
        if not getattr(param.callback, "number_checked", False):
            param.callback = number_checked(param.callback)
    for sub in getattr(command, "commands", {}).values():
        _harden(sub)
    return command


def sane_columns() -> None:
    """A COLUMNS (or LINES) that is not a positive whole number is dropped, so that the terminal's own width (or
    80 when piped) is used: rich takes COLUMNS=0 as a width of zero and prints nothing."""
    for name in ("COLUMNS", "LINES"):
        value = os.environ.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) > 0):
            del os.environ[name]


def _usage_error(err: Any) -> None:
    """click's usage message (usage, hint, `Error: ...`) on stderr, what the user typed in it escaped."""
    buf = io.StringIO()
    err.show(file=buf)
    sys.stderr.write(printable(buf.getvalue()))


def main() -> None:
    """Run the CLI. Usage errors: click's usage message and exit 2; AdvisorError (and a non-finite or absurd
    number given to any option): one line on stderr and exit 2 (ADVISOR_DEBUG=1 shows a traceback); Ctrl-C: exit
    130, also while the CLI loads."""
    try:
        sane_columns()
        code = _harden(typer.main.get_command(app))(standalone_mode=False, prog_name="advisor")
    except AdvisorError as err:
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        print(f"advisor: error: {printable(str(err), lines=False)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as err:
        # typer ships its own click (`typer._click`), so usage errors are matched by what they offer
        exit_code = getattr(err, "exit_code", None)
        if hasattr(err, "show") and isinstance(exit_code, int):
            _usage_error(err)
            sys.exit(exit_code)
        if type(err).__name__ == "Abort":
            sys.exit(130)
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        print(f"advisor: internal error: {type(err).__name__}: {printable(str(err), lines=False)} (set "
              "ADVISOR_DEBUG=1 for a traceback)", file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
