"""`advisor inspect MODEL...`: the normalized architecture, parameter counts, bytes and KV per token."""

from __future__ import annotations

from advisor.commands import options as opt


def inspect(models: opt.Models = None, json_out: opt.Json = False) -> None:
    """Read config.json into the normalized architecture: layers, attention, experts, params, bytes."""
    from advisor.decide.architecture import describe_models
    from advisor.report.sink import emit, note
    from advisor.report.tables import inspect_table

    rows, skipped = describe_models(models)
    for line in skipped:
        note(line)
    emit(rows, json_out, inspect_table)
