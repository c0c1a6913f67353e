"""The model arguments of every command, resolved one way: each reference is found or "not found" with the
reason; a command exits 2 only when none of its models could be resolved at all."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.resolve import Resolved


def problem(ref: str, err: AdvisorError) -> str:
    """One line for a model that could not be used: `REF: not found: why` when no source holds it, else the
    error itself (a config that exists but cannot be read)."""
    from advisor.errors import NotFound

    text = str(err)
    if not isinstance(err, NotFound):
        return text if text.startswith(ref) else f"{ref}: {text}"
    return f"{ref}: not found: {text.removeprefix(f'{ref}: ')}"


def resolve_models(refs: list[str] | None, warn: bool = True) -> tuple[list[Resolved], dict[str, AdvisorError]]:
    """The references that resolve (all catalog models when none are given) and the error of each other one;
    their `problem` lines go to stderr when `warn`. AdvisorError (exit 2) when none resolves."""
    from advisor import catalog
    from advisor.resolve import resolve_all

    found, missing = resolve_all(refs or catalog.ids())
    if not found:
        raise AdvisorError("; ".join(problem(ref, err) for ref, err in missing.items()))
    if warn:
        for ref, err in missing.items():
            print(f"advisor: {problem(ref, err)}", file=sys.stderr)
    return found, missing
