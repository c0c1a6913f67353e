"""Human formatting of counts and sizes."""

from __future__ import annotations


def billions(n: float) -> str:
    return f"{n / 1e9:,.1f}B" if n >= 1e9 else f"{n / 1e6:,.0f}M"


def gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


def gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.1f} GB"


def kib(nbytes: float) -> str:
    return f"{nbytes / 1024:,.1f} KiB"


def plural(n: int, word: str) -> str:
    """`1 GPU`, `8 GPUs`, `1,024 users`."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")
