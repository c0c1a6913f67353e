"""`advisor check` of disaggregated rows: the JSON document `{"rows": [...], "summary": {...}, "calibrated": {...}}`
(each row: its input with both pools, measured, predicted, signed error, reason, deployment) or one line per row and
the summary table, as for aggregated rows (`report/check_table.py`). Renders `calibrate/disagg_check.py`."""

from __future__ import annotations

import shutil
import sys
from typing import Any

from advisor.calibrate.disagg_check import METRICS, DisaggCheck
from advisor.calibrate.disagg_predict import DisaggRow
from advisor.report.check_table import _print_summary
from advisor.report.sink import emit
from advisor.report.units import num

COLS = ("model", "hw/engine", "pools", "C", "in/out", "TTFT ms meas / pred (err)", "TPOT ms meas / pred (err)",
        "note")
WIDTHS = [30, 22, 34, 5, 11, 28, 26]


def record(r: DisaggRow, calibrated: dict[str, str]) -> dict[str, Any]:
    """One row's JSON record."""
    ok = r.predicted is not None
    return {"input": {"model": r.model, "hardware": r.hardware, "engine": r.engine, "plan_status": r.plan_status,
                      "prefill": r.pools.get("prefill"), "decode": r.pools.get("decode"),
                      "concurrency": r.concurrency or None, "input_len": r.input_len or None,
                      "output_len": r.output_len or None, "source": r.source, "file": r.file, "row": r.row},
            "measured": {m: r.measured.get(m) for m in METRICS},
            "predicted": {m: (r.predicted or {}).get(m) for m in METRICS} if ok else None,
            "error_pct": {m: r.error_pct(m) for m in METRICS}, "reason": "; ".join(
                x for x in (r.reason, *r.notes) if x) or None,
            "deployment": r.deployment or None,
            "calibrated": calibrated.get(f"{r.hardware}/{r.engine}") if ok else None}


def show_disagg_check(result: DisaggCheck, json_out: bool, summary_only: bool) -> None:
    """The document (--json) or the rows and summary; `summary_only` leaves the rows out."""
    doc: dict[str, Any] = {}
    if not summary_only:
        doc["rows"] = [record(r, result.calibrated) for r in result.rows]
    doc.update(summary=result.summary, calibrated=result.calibrated)
    if result.summary_before is not None:
        doc["summary_before"] = result.summary_before
    emit(doc, json_out, lambda d: _print(d, result))


def _cell(r: DisaggRow, m: str) -> str:
    meas, pred, err = r.measured.get(m), (r.predicted or {}).get(m), r.error_pct(m)
    if meas is None and pred is None:
        return "-"
    pct = "" if err is None else f" ({err:+.0f}%)"
    return f"{'-' if meas is None else num(meas)} / {'-' if pred is None else num(pred)}{pct}"


def _pools(r: DisaggRow) -> str:
    def one(side: str) -> str:
        p = r.pools.get(side) or {}
        if not p.get("workers"):
            return "-"
        parts = [f"TP{p['tp']}"] + [f"{k.upper()}{p[k]}" for k in ("pp", "dp", "ep") if p.get(k, 1) > 1]
        return f"{p['workers']}x{'+'.join(parts)}"

    return f"P {one('prefill')} / D {one('decode')}"


def _print(doc: dict[str, Any], result: DisaggCheck) -> None:
    out = sys.stdout
    if "rows" in doc:
        width = shutil.get_terminal_size().columns if out.isatty() else 0
        head = "  ".join(c.ljust(w) for c, w in zip(COLS, WIDTHS, strict=False)) + "  " + COLS[-1]
        lines = ["Measured vs predicted, disaggregated rows at their own pools (signed error)", _cut(head, width)]
        for r in result.rows:
            cells = [r.model, f"{r.hardware}/{r.engine}", _pools(r), str(r.concurrency or "?"),
                     f"{r.input_len or '?'}/{r.output_len or '?'}", _cell(r, "ttft_ms"), _cell(r, "tpot_ms"),
                     "; ".join(x for x in (r.reason, *r.notes) if x)]
            line = "  ".join(c.ljust(w) for c, w in zip(cells, WIDTHS, strict=False)) + "  " + cells[-1]
            lines.append(_cut(line.rstrip(), width))
        out.write("\n".join(lines) + "\n")
        out.flush()
    if "summary_before" in doc:
        _print_summary(doc["summary_before"], "Before: the shipped terms on the same rows")
    _print_summary(doc["summary"], "With --calibration" if "summary_before" in doc else None)
    for label, line in doc["calibrated"].items():
        out.write(f"calibrated {label}: {line}\n")


def _cut(line: str, width: int) -> str:
    return line if not width or len(line) <= width else line[: width - 1] + "…"


def fit_check_lines(doc: dict[str, Any], bucket: str) -> list[str]:
    """`calibrate`'s lines on the disaggregated rows it was given (`calibrate/disagg_check.py: fit_check`)."""
    if not doc["rows"]:
        return [f"disaggregated rows: none of {bucket} in {', '.join(doc['files'])} (not used)"]
    out = [f"disaggregated rows of {bucket}: {doc['predicted']} of {doc['rows']} predicted at their own pools "
           "(a check of the fit, not fitted): median |error| before -> after"]
    for m in ("ttft_ms", "tpot_ms"):
        b, a = doc["before"][m], doc["after"][m]
        if b.get("n"):
            out.append(f"  {m.split('_')[0].upper()}: {b['median_abs_pct']:g}% -> {a['median_abs_pct']:g}% "
                       f"(signed {b['median_signed_pct']:+g}% -> {a['median_signed_pct']:+g}%, n={a['n']})")
    return out
