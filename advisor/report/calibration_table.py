"""`advisor calibrate`'s tables: the fitted terms (fitted, kept at the prior and why, or at a bound), the
cross-validated errors, and the rows set aside or rejected. Renders a `calibrate/refit.py: RefitReport`."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from advisor.calibrate.refit import RefitReport
from advisor.report.console import SafeConsole as Console
from advisor.report.units import num
from advisor.text import plural

REJECTED_SHOWN = 20


def calibration_tables(doc: RefitReport) -> None:
    console = Console()
    t = Table(title=f"Calibration {doc.hardware}/{doc.engine} -> {doc.output} ({plural(doc.rows_used, 'row')})")
    for col in ("term", "value", "note"):
        t.add_column(col)
    for k, v in doc.terms.items():
        note = doc.refused.get(k) or ("bound hit" if k in doc.bounds_hit else "fitted")
        t.add_row(k, num(v), note)
    console.print(t)
    c = Table(title=f"Cross-validated |error| ({doc.cv_method})")
    for col in ("metric", "n", "median %", "p90 %"):
        c.add_column(col)
    for m, s in doc.cv.items():
        c.add_row(m, str(s["n"]), str(s.get("median_abs_pct", "-")), str(s.get("p90_abs_pct", "-")))
    console.print(c)
    if doc.rows_set_aside:
        console.print(f"rows set aside (their sweep contradicts itself, or they need more than the GPUs' peak): "
                      f"{len(doc.rows_set_aside)}")
        for why in sorted({r.reason for r in doc.rows_set_aside}):
            console.print(f"  {why}")
    console.print(f"rows rejected: {len(doc.rows_rejected)}")
    for r in doc.rows_rejected[:REJECTED_SHOWN]:
        console.print(f"  {Path(r.file).name} row {r.row}: {r.reason}")
    if doc.disaggregated is not None:
        from advisor.report.disagg_check import fit_check_lines

        for line in fit_check_lines(doc.disaggregated, f"{doc.hardware}/{doc.engine}"):
            console.print(line, highlight=False)
