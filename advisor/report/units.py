"""Human formatting of counts and sizes in tables (`advisor.text.plural` is shared with `decide`)."""

from __future__ import annotations


def billions(n: float) -> str:
    return f"{n / 1e9:,.1f}B" if n >= 1e9 else f"{n / 1e6:,.0f}M"


def gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


def gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.1f} GB"


def kib(nbytes: float) -> str:
    return f"{nbytes / 1024:,.1f} KiB"


def num(v: float) -> str:
    """A measured or predicted number for a table: thousands separated, no exponent (24,560 not 2.456e+04),
    four significant digits below 1,000."""
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.2e}"
