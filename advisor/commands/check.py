"""`advisor check MEASUREMENTS...`: predict every measured row and report signed % errors and a summary."""

from __future__ import annotations

from typing import Any

from advisor.commands import options as opt
from advisor.commands.output import emit

_INPUT_KEYS = ("model", "hardware", "engine", "engine_version", "weight_dtype", "tp", "pp", "dp", "ep",
               "concurrency", "input_len", "output_len", "source", "file", "row")


def check(measurements: opt.Measurements, calibration: opt.Calibration = None, json_out: opt.Json = False,
          model: opt.CondModel = None, hw: opt.CondHw = None, engine: opt.CondEngine = None, tp: opt.Tp = None,
          pp: opt.Pp = None, dp: opt.Dp = None, ep: opt.Ep = None, concurrency: opt.CondConcurrency = None,
          weight_dtype: opt.WeightDtypeOpt = None) -> None:
    """Compare predictions with measured TTFT, TPOT and tok/s; rows that cannot be predicted say why.

    A measurement CSV has a header row with these columns (extra columns are ignored, an empty cell is
    unknown): model, hardware, engine (vllm|sglang|trtllm), engine_version, weight_dtype (empty = the
    checkpoint's own; bf16|fp8|int4|nvfp4|mxfp4), tp, pp, dp, ep, concurrency, input_len, output_len,
    ttft_ms, tpot_ms, output_tok_s, source. model, hardware, tp and concurrency are required, and at
    least one of ttft_ms, tpot_ms, output_tok_s. A `vllm bench serve --save-result` JSON is read too;
    the condition flags fill what a file does not hold (it has no hardware or plan).
    Example: advisor check advisor/examples/case_study.csv"""
    defaults = opt.measurement_defaults(model=model, hardware=hw, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep,
                                        concurrency=concurrency, weight_dtype=weight_dtype)
    emit(check_doc(measurements, calibration, defaults), json_out, _print)


def check_doc(files: list[str], calibration: str | None, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `check` JSON document: rows (input, measured, predicted, error_pct, reason, calibrated) + summary."""
    from advisor.calibrate.measurements import read_measurements
    from advisor.calibrate.predict_rows import METRIC_KEYS, error_pct, prepare, with_predictions
    from advisor.calibrate.report import summarize
    from advisor.calibrate.store import terms_for

    if calibration is not None:
        from pathlib import Path

        from advisor.calibrate.store import read_calibration

        read_calibration(Path(calibration))  # a corrupted file is an error even when no row uses it
    sets = [read_measurements(f, defaults=defaults) for f in files]
    preds, buckets = prepare([r for s in sets for r in s.rows])
    terms, how = {}, {}
    for key, b in buckets.items():
        terms[key], doc = terms_for(b.hw, key[1], calibration)
        how[key] = {"how": doc["how"], "rows": doc.get("rows", 0)}
    preds = with_predictions(preds, buckets, terms)
    rows: list[dict[str, Any]] = []
    for p in preds:
        reason = "; ".join(x for x in (p.reason, *p.notes) if x) or None
        rows.append({"input": {k: getattr(p.row, k) for k in _INPUT_KEYS},
                     "measured": {m: getattr(p.row, m) for m in METRIC_KEYS},
                     "predicted": p.predicted, "error_pct": error_pct(p), "reason": reason,
                     "calibrated": how.get(p.key) if p.predicted is not None else None})
    for s in sets:
        for rej in s.rejected:
            rows.append({"input": {**{k: rej.raw.get(k) for k in _INPUT_KEYS[:-2]}, "file": rej.file, "row": rej.row},
                         "measured": {m: rej.raw.get(m) for m in METRIC_KEYS}, "predicted": None,
                         "error_pct": {m: None for m in METRIC_KEYS}, "reason": f"rejected: {rej.reason}",
                         "calibrated": None})
    summary = summarize(preds)
    summary.setdefault("overall", {})["rejected_rows"] = sum(len(s.rejected) for s in sets)
    return {"rows": rows, "summary": summary}


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.0f}%" if pct else f"{v:.4g}"


def _print(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title="Measured vs predicted (signed error)")
    for col in ("model", "hw/engine", "plan", "C", "in/out", "TTFT ms", "TPOT ms", "tok/s", "note"):
        t.add_column(col)
    for r in doc["rows"]:
        i, m, p, e = r["input"], r["measured"], r["predicted"] or {}, r["error_pct"]
        cells = [f"{_fmt(m[k])} / {_fmt(p.get(k))} ({_fmt(e[k], True)})"
                 for k in ("ttft_ms", "tpot_ms", "output_tok_s")]
        plan = f"TP{i['tp']} PP{i['pp']} DP{i['dp']} EP{i['ep']}"
        t.add_row(str(i["model"]), f"{i['hardware']}/{i['engine'] or 'vllm'}", plan, str(i["concurrency"]),
                  f"{i['input_len'] or '?'}/{i['output_len'] or '?'}", *cells, r["reason"] or "")
    console.print(t)
    s = Table(title="Summary: n, median |err| %, p90 |err| %")
    for col in ("hardware/engine", "rows", "predicted", "TTFT", "TPOT", "tok/s"):
        s.add_column(col)
    for label, g in doc["summary"].items():
        cells = [f"{g.get(k, {}).get('n', 0)}, {g.get(k, {}).get('median_abs_pct', '-')}, "
                 f"{g.get(k, {}).get('p90_abs_pct', '-')}" for k in ("ttft_ms", "tpot_ms", "output_tok_s")]
        s.add_row(label, str(g.get("rows", 0)), str(g.get("predicted", 0)), *cells)
    console.print(s)
