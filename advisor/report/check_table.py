"""`advisor check`'s output: the JSON document `{"rows": [...], "summary": {...}, "calibrated": {...},
"unpredicted": {reason: rows}}` (rows streamed as they are made; `summary_before` with --calibration), or one line
per row, the summary table and how many rows were not predicted and why. Text from the file is escaped for the
terminal (`advisor.text.printable`). rich is imported for the summary table only (--json never loads it)."""

from __future__ import annotations

import shutil
import sys
from typing import Any

from advisor.calibrate.check import METRICS, CheckResult
from advisor.calibrate.report import Summary
from advisor.report.check_rows import CheckRows
from advisor.report.progress import Progress
from advisor.report.sink import emit
from advisor.text import plural, printable

COLS = ("model", "hw/engine", "plan", "C", "in/out", "TTFT ms meas / pred (err)", "TPOT ms meas / pred (err)",
        "tok/s meas / pred (err)", "note")
WIDTHS = [34, 36, 20, 5, 11, 28, 26, 28]
NAMES = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "output_tok_s": "tok/s"}
UNPREDICTED_SHOWN = 12  # reasons listed under the summary, the commonest first


def show_check(result: CheckResult, json_out: bool, summary_only: bool, progress: Progress) -> None:
    """The document (--json) or the rows and summary; `summary_only` leaves the rows out."""
    n = len(result.rows)
    doc: dict[str, Any] = {}
    if not summary_only:
        doc["rows"] = CheckRows(result.rows, lambda k: progress.update("writing rows", k, n))
    doc.update(summary=result.summary, calibrated=result.calibrated)
    if result.summary_before is not None:
        doc["summary_before"] = result.summary_before
    doc["unpredicted"] = result.unpredicted
    emit(doc, json_out, lambda d: _print(d, progress))


def _print(doc: dict[str, Any], progress: Progress) -> None:
    """Rows as one line each (never wrapped; on a terminal, cut to its width), then the summary table."""
    out = sys.stdout
    if "rows" in doc:
        tty = out.isatty()
        if tty:
            progress.close()
            progress.on = False  # the rows go to the same terminal
        width = shutil.get_terminal_size().columns if tty else 0
        head = "  ".join(c.ljust(w) for c, w in zip(COLS, WIDTHS, strict=False)) + "  " + COLS[-1]
        out.write("Measured vs predicted (signed error)\n" + _cut(head, width) + "\n")
        chunk: list[str] = []
        rows: CheckRows = doc["rows"]
        for k, cells in enumerate(rows.lines(), start=1):
            line = "  ".join(c.ljust(w) for c, w in zip(cells, WIDTHS, strict=False)) + "  " + cells[-1]
            chunk.append(_cut(printable(line.rstrip(), lines=False), width))
            if rows.progress is not None and not k % 4096:
                rows.progress(k)
            if len(chunk) >= 2048:
                out.write("\n".join(chunk) + "\n")
                chunk.clear()
        if chunk:
            out.write("\n".join(chunk) + "\n")
        out.flush()
    if "summary_before" in doc:
        _print_summary(doc["summary_before"], "Before: the shipped terms on the same rows")
    _print_summary(doc["summary"], "With --calibration" if "summary_before" in doc else None)
    _print_unpredicted(doc["unpredicted"], doc["summary"])
    for label, line in doc["calibrated"].items():  # where the terms came from, bounds hit said
        out.write(printable(f"calibrated {label}: {line}", lines=False) + "\n")


def _print_unpredicted(why: dict[str, int], summary: Summary) -> None:
    """How many rows have no prediction, and why (the commonest reasons first; --json has them all)."""
    total = sum(why.values())
    if not total:
        return
    rows = summary["overall"].rows + (summary["overall"].rejected_rows or 0) if "overall" in summary else total
    out = sys.stdout
    out.write(f"{plural(total, 'row')} of {rows:,} not predicted, by reason:\n")
    for reason, n in list(why.items())[:UNPREDICTED_SHOWN]:
        out.write(printable(f"  {n:>6,}  {reason}", lines=False) + "\n")
    if len(why) > UNPREDICTED_SHOWN:
        rest = sum(list(why.values())[UNPREDICTED_SHOWN:])
        out.write(f"  {rest:>6,}  for {len(why) - UNPREDICTED_SHOWN} other reasons (--json: unpredicted)\n")


def _cut(line: str, width: int) -> str:
    return line if not width or len(line) <= width else line[: width - 1] + "…"


def _print_summary(summary: Summary, title: str | None = None) -> None:
    """One line per (hardware/engine, metric) measured; columns that do not fit the width are left out, named."""
    from advisor.report.console import SafeConsole
    from advisor.report.fitwidth import Col, fitted_table, say_dropped

    cols = (Col("hardware/engine", 10, fold=True), Col("rows", 5, right=True), Col("predicted", 4, right=True),
            Col("metric", 9), Col("n", 8, right=True), Col("median |err| %", 9, right=True),
            Col("p90 |err| %", 7, right=True))
    cells = []
    for label, g in summary.items():
        shown: list[str | None] = [m for m in METRICS if m in g.metrics and g.metrics[m].n] or [None]
        for j, m in enumerate(shown):
            stats = g.metrics[m] if m else None
            cells.append([label if not j else "", f"{g.rows:,}" if not j else "",
                          f"{g.predicted:,}" if not j else "", NAMES.get(m or "", "-"),
                          f"{stats.n if stats else 0:,}", _pct(stats.median_abs_pct if stats else None),
                          _pct(stats.p90_abs_pct if stats else None)])
    console = SafeConsole()
    head = "Summary: signed error of the predicted rows" + (f" ({title})" if title else "")
    table, dropped = fitted_table(console, head, cols, cells)
    console.print(table)
    say_dropped(console, dropped)
    rejected = summary["overall"].rejected_rows if "overall" in summary else None
    if rejected:
        console.print(f"{plural(rejected, 'row')} rejected (reasons in the rows above, or --json)", highlight=False)


def _pct(v: float | None) -> str:
    return "-" if v is None else str(v)
