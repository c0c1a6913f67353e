"""Words for numbers, shared by the decisions (a plan's `why` sentence) and the report (tables): below both, so
that `decide` never imports `report`."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """`1 GPU`, `8 GPUs`, `1,024 users`."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")
