"""The models a command asks about, resolved one way (`advisor/resolve.py`, so that no two commands disagree about
a model): each reference is found, or "not found" with the reason; a command fails only when none of its models
resolves at all. A request must fit the model's context and the engine's --max-model-len."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.decide.query import Query
    from advisor.decide.ranked import Unranked
    from advisor.resolve import Resolved


def problem(ref: str, err: AdvisorError) -> str:
    """One line for a model that could not be used: `REF: not found: why` when no source holds it, else the
    error itself (a config that exists but cannot be read)."""
    from advisor.errors import NotFound

    text = str(err)
    if not isinstance(err, NotFound):
        return text if text.startswith(ref) else f"{ref}: {text}"
    return f"{ref}: not found: {text.removeprefix(f'{ref}: ')}"


def resolve_models(refs: list[str] | None) -> tuple[list[Resolved], dict[str, AdvisorError]]:
    """The references that resolve (all catalog models when none are given) and the error of each other one.
    AdvisorError (exit 2) when none resolves."""
    from advisor import catalog
    from advisor.resolve import resolve_all

    found, missing = resolve_all(refs or catalog.ids())
    if not found:
        raise AdvisorError("; ".join(problem(ref, err) for ref, err in missing.items()))
    return found, missing


def skipped(missing: dict[str, AdvisorError]) -> list[str]:
    """The `problem` line of each model that could not be used (the command says them on stderr)."""
    return [problem(ref, err) for ref, err in missing.items()]


def check_lengths(arch_max: int, model: str, input_len: int, output_len: int, max_model_len: int | None) -> None:
    """A request must fit the model's context and the engine's --max-model-len (one line naming the flag)."""
    if input_len + output_len > arch_max:
        raise AdvisorError(f"--input-len/--output-len: {input_len}+{output_len} tokens exceed {model}'s context "
                           f"of {arch_max}")
    if max_model_len is not None and max_model_len > arch_max:
        raise AdvisorError(f"--max-model-len: {max_model_len} exceeds {model}'s context of {arch_max} (the engine "
                           "refuses it)")
    if max_model_len is not None and input_len + output_len > max_model_len:
        raise AdvisorError(f"--max-model-len: {input_len}+{output_len} tokens exceed --max-model-len "
                           f"{max_model_len}")


def candidates(models: list[str] | None, q: Query, max_model_len: int | None
               ) -> tuple[list[Resolved], list[Unranked]]:
    """The models `rank` and `pareto` compare: those that resolve and whose context holds the request; the others
    with the reason (a model no source holds says "not found")."""
    from advisor.decide.ranked import Unranked
    from advisor.errors import NotFound

    resolved, missing = resolve_models(models)
    unknown = [Unranked(model=ref, found=not isinstance(err, NotFound),
                        reason=problem(ref, err).removeprefix(f"{ref}: ")) for ref, err in missing.items()]
    good = []
    for r in resolved:
        try:
            check_lengths(r.arch.max_context, r.arch.model, q.input_len, q.output_len, max_model_len)
            good.append(r)
        except AdvisorError as err:
            unknown.append(Unranked(model=r.arch.model, source=r.source, reason=str(err)))
    return good, unknown
