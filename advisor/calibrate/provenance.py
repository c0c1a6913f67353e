"""Where a prediction's step-level terms came from, in one line (shipped pooled terms, a --calibration file, or
the priors), with the rows they were fitted on, their held-out error and any term fitted to its bound. Part of
the results (check's `calibrated` field), so it lives below `report`, which prints it too."""

from __future__ import annotations

from typing import Any

from advisor.text import plural


def calibration_line(cal: dict[str, Any]) -> str:
    """The line for a `calibrated` note (`calibrate/store.py: terms_for`'s second value, with hardware and
    engine)."""
    bound = (f"; at a fit bound (the data push past it; treat with care): {', '.join(cal['bounds_hit'])}"
             if cal.get("bounds_hit") else "")
    if not cal.get("rows"):
        held = (cal.get("cv") or {}).get("tpot_ms", {}).get("median_abs_pct")
        err = f"; held-out median TPOT error for a GPU never measured: {held:.0f}%" if held is not None else ""
        return f"{cal['how']}{err}{bound}"
    cv = cal.get("cv", {}).get("tpot_ms") or cal.get("cv", {}).get("output_tok_s") or {}
    pct = cv.get("median_abs_pct")
    err = f", held-out median error {pct:.0f}%" if pct is not None else ""
    instead = f"; in place of {cal['replaces']}" if cal.get("replaces") else ""
    return (f"{cal['how']} ({cal['hardware']}/{cal['engine']}, fitted on {plural(cal['rows'], 'measured row')}{err})"
            f"{instead}{bound}")
