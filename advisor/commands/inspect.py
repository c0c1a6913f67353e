"""`advisor inspect MODEL...`: the normalized architecture, parameter counts, bytes and KV per token."""

from __future__ import annotations

from advisor.commands import options as opt


def inspect(models: opt.Models = None, json_out: opt.Json = False) -> None:
    """Read config.json into the normalized architecture: layers, attention, experts, params, bytes."""
    from advisor.decide.architecture import describe_models
    from advisor.report.sink import emit, note
    from advisor.report.tables import inspect_table

    rows, unknown = describe_models(models)
    for u in unknown:
        note(f"{u.model}: {u.reason}")
    # --json keeps each model that could not be read, with its reason, as `rank --json` does
    emit([*rows, *({"model": u.model, "found": u.found, "reason": u.reason} for u in unknown)], json_out,
         lambda _: inspect_table(rows))
