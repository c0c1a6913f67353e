"""A prediction's 80% interval beside its number (`9.9 (8.6-11.8)`), and the line that says where the interval
comes from: the calibration's held-out errors (`cost/interval.py`), whether the box's calibration is borrowed
(no measurements of this GPU: the engine-wide terms fitted on other GPUs) and whether a term sits at its bound."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.cost.prediction import Prediction

METRICS = ("ttft_ms", "tpot_ms", "per_user_tok_s", "output_tok_s")


def _fmt(v: float, decimals: int) -> str:
    return f"{v:,.{decimals}f}"


def bounds(d: Prediction, metric: str, decimals: int = 0) -> str | None:
    """`8.6-11.8`: the interval of `metric` at the value's own precision, or None where there is none."""
    iv = d.interval or {}
    lo, hi = iv.get(f"{metric}_low"), iv.get(f"{metric}_high")
    if lo is None or hi is None:
        return None
    return f"{_fmt(lo, decimals)}-{_fmt(hi, decimals)}"


def ranged(d: Prediction, metric: str, decimals: int = 0, unit: str = "") -> str:
    """`9.9 ms (8.6-11.8)`: the predicted value, its unit and its interval (the value alone without one)."""
    value = getattr(d, metric)
    shown = (_fmt(value, decimals) if value is not None else "-") + (f" {unit}" if unit else "")
    b = bounds(d, metric, decimals)
    return f"{shown} ({b})" if b else shown


def stacked(d: Prediction, metric: str, decimals: int = 0) -> str:
    """The value over its interval on a second line, for a narrow table."""
    value = getattr(d, metric)
    shown = _fmt(value, decimals) if value is not None else "-"
    b = bounds(d, metric, decimals)
    return f"{shown}\n{b}" if b else shown


def borrowed(cal: dict[str, Any]) -> str | None:
    """Why the box's calibration is not its own, or None: no measurements of this GPU (the engine-wide terms of
    the GPUs that were measured), or no calibration at all for the engine (priors)."""
    if cal.get("rows"):
        return None
    hw, engine = cal.get("hardware", "this GPU"), cal.get("engine", "this engine")
    if str(cal.get("how", "")).startswith("none"):
        return f"no calibration for {engine}: priors, no interval"
    return (f"calibration borrowed: {hw} has no measurements, its terms are the engine-wide {engine} ones fitted on "
            "other GPUs, and the intervals (from models held out on those GPUs) likely understate its error")


def at_bound(cal: dict[str, Any]) -> str | None:
    """The terms that sit at a bound of their fit, or None."""
    hit = cal.get("bounds_hit") or []
    return (f"{', '.join(hit)} at {'its' if len(hit) == 1 else 'their'} fit bound (the data push past it): the "
            "intervals understate the error") if hit else None


PARENS = "ranges: 80% intervals from the calibration's held-out errors (tok/s: from TTFT's and TPOT's)"


def caveats(cal: dict[str, Any]) -> list[str]:
    """What weakens the intervals of this calibration: borrowed, a term at its bound."""
    return [p for p in (borrowed(cal), at_bound(cal)) if p]


def interval_note(cal: dict[str, Any], shown: bool) -> str:
    """The line under the numbers: what the parentheses are (when any interval is `shown`), then the caveats."""
    return "; ".join(([PARENS] if shown else []) + caveats(cal))
