"""`advisor check MEASUREMENTS...`: predict every measured row and report signed % errors and a summary.

Rows are read, predicted and written as columns (`calibrate.rowtable`, `calibrate.predict_table`), so 200k rows
take seconds, not minutes; rows are made one by one while they are written (`output.Stream`)."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.commands import options as opt
from advisor.commands.output import emit

if TYPE_CHECKING:
    from advisor.calibrate.predict_table import Prepared
    from advisor.report.progress import Progress

METRICS = ("ttft_ms", "tpot_ms", "output_tok_s")


def check(measurements: opt.Measurements, calibration: opt.Calibration = None, json_out: opt.Json = False,
          summary: Annotated[bool, typer.Option("--summary", help="Print only the summary, not every row.")] = False,
          model: opt.CondModel = None, hw: opt.CondHw = None, engine: opt.CondEngine = None, tp: opt.Tp = None,
          pp: opt.Pp = None, dp: opt.Dp = None, ep: opt.Ep = None, concurrency: opt.CondConcurrency = None,
          weight_dtype: opt.WeightDtypeOpt = None) -> None:
    """Compare predictions with measured TTFT, TPOT and tok/s; rows that cannot be predicted say why.

    A measurement CSV has a header row with these columns (extra columns are ignored, an empty cell is
    unknown): model, hardware, engine (vllm|sglang|trtllm), engine_version, weight_dtype (empty = the
    checkpoint's own; bf16|fp8|int4|nvfp4|mxfp4), tp, pp, dp, ep, spec_tokens (tokens drafted per step by
    MTP/EAGLE speculative decoding; empty = off), spec_accept_len (the run's mean acceptance length, tokens per
    verify step with the bonus token, vLLM's "Mean acceptance length"; a speculative row without it is not
    predicted), kv_cache_dtype (the run's --kv-cache-dtype: auto|fp8|bf16;
    empty = the engine's default), length_ratio (the benchmark drew lengths uniformly from length_ratio x to
    1 x input_len/output_len, e.g. --random-range-ratio 0.8; 1 = every request exactly those; empty = unknown),
    batch_wait_iters and batch_wait_ratio (TensorRT-LLM's batch_wait_timeout_iters and
    batch_wait_max_tokens_ratio; empty = 0, off), recv_interval (SGLang's --scheduler-recv-interval; empty = 1),
    async_scheduling (1/0: the scheduler prepared each step while the previous ran, vLLM --async-scheduling,
    SGLang's overlap schedule, TensorRT-LLM's overlap scheduler; empty = the release's default, on except vLLM < 0.14),
    adp_timeout_iters and adp_batching_wait_iters (TensorRT-LLM's attention_dp_config timeout_iters and
    batching_wait_iters with enable_balance; empty = 0, balancing off, and 10),
    mem_fraction (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static; empty = the default),
    concurrency, input_len, output_len, ttft_ms, tpot_ms, output_tok_s, source. model, hardware, tp and
    concurrency are required, and at least one of ttft_ms, tpot_ms, output_tok_s. A `vllm bench serve
    --save-result` JSON is read too; the condition flags fill what a file does not hold (it has no hardware or
    plan).
    Example: advisor check advisor/examples/case_study.csv"""
    from advisor.report.progress import Progress

    defaults = opt.measurement_defaults(model=model, hardware=hw, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep,
                                        concurrency=concurrency, weight_dtype=weight_dtype)
    with Progress("advisor check") as progress:
        doc = check_doc(measurements, calibration, defaults, progress)
        if summary:
            doc = {k: v for k, v in doc.items() if k != "rows"}
        emit(doc, json_out, lambda d: _print(d, progress))


def _terms(prep: Prepared, calibration: str | None, files: list[str]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """Terms and the `calibrated` note per (hardware, engine) bucket: the --calibration file for the bucket it was
    fitted for, the shipped pooled terms (own or engine-wide) for the others."""
    from pathlib import Path

    from advisor.calibrate.store import read_calibration, terms_for
    from advisor.errors import AdvisorError
    from advisor.report.tables import calibration_line

    own = read_calibration(Path(calibration)) if calibration is not None else None  # checked even if unused
    if own is not None and prep.buckets and (own.hardware, own.engine) not in prep.buckets:
        raise AdvisorError(f"--calibration {calibration}: fitted for {own.hardware}/{own.engine}, and no predictable "
                           f"row of {', '.join(files)} is {own.hardware}/{own.engine}")
    terms, how = {}, {}
    for key, b in prep.buckets.items():
        mine = own is not None and (own.hardware, own.engine) == key
        terms[key], doc = terms_for(b.hw, key[1], calibration if mine else None)
        how[key] = {"how": doc["how"], "rows": doc.get("rows", 0), "bounds_hit": doc.get("bounds_hit", []),
                    "line": calibration_line({**doc, "hardware": doc.get("hardware", key[0]), "engine": key[1]})}
    return terms, how


def check_doc(files: list[str], calibration: str | None, defaults: dict[str, Any] | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """The `check` document: rows (input, measured, predicted, error_pct, reason, calibrated; made while they are
    written) + summary."""
    import numpy as np

    from advisor.calibrate.predict_table import predict, prepare_table
    from advisor.calibrate.report import summarize
    from advisor.calibrate.rowtable import RowTable, read_table
    from advisor.report.check_rows import CheckRows, Computed
    from advisor.report.progress import Progress

    bar = progress or Progress("", stream=None, delay_s=math.inf)
    tables, rejected = [], []
    for f in files:
        tab, rej = read_table(f, defaults=defaults, progress=lambda n: bar.update("reading rows", n))
        tables.append(tab)
        rejected += rej
    table = RowTable.concat(tables)
    prep = prepare_table(table)
    terms, how = _terms(prep, calibration, files)
    pred = predict(prep, terms, lambda n: bar.update("predicting", n, len(table)))
    measured = {m: getattr(table, m) for m in METRICS}
    with np.errstate(invalid="ignore", divide="ignore"):
        err = {m: 100 * (pred[m] - measured[m]) / measured[m] for m in METRICS}
    labels = [f"{h}/{e}" for h, e in prep.keys]
    summ = summarize(labels, prep.key, prep.reason < 0, err)
    summ.setdefault("overall", {"rows": 0, "predicted": 0})["rejected_rows"] = len(rejected)
    n = len(table) + len(rejected)
    computed = Computed(prep=prep, pred=pred, err=err, how=how, note=lambda *k: _note(prep, *k), rejected=rejected)
    doc: dict[str, Any] = {"rows": CheckRows(computed, lambda k: bar.update("writing rows", k, n)), "summary": summ,
                           "calibrated": {f"{k[0]}/{k[1]}": v["line"] for k, v in how.items()}}
    if calibration is not None:  # the same rows under the shipped terms: what the user's own fit changed
        shipped, _ = _terms(prep, None, files)
        before = predict(prep, shipped)
        with np.errstate(invalid="ignore", divide="ignore"):
            err0 = {m: 100 * (before[m] - measured[m]) / measured[m] for m in METRICS}
        doc["summary_before"] = summarize(labels, prep.key, prep.reason < 0, err0)
    return doc


def _note(prep: Prepared, reason: int, no_input: bool, no_output: bool, trtllm: bool) -> str | None:
    """The row's reason (why it is not predicted) and what its prediction assumes (`predict_rows.assumptions`)."""
    from advisor.calibrate.predict_rows import assumptions

    parts = [prep.reasons[reason]] if reason >= 0 else []
    return "; ".join([*parts, *assumptions(no_input, no_output, trtllm)]) or None


COLS = ("model", "hw/engine", "plan", "C", "in/out", "TTFT ms meas / pred (err)", "TPOT ms meas / pred (err)",
        "tok/s meas / pred (err)", "note")
WIDTHS = [34, 36, 20, 5, 11, 28, 26, 28]


def _print(doc: dict[str, Any], progress: Progress) -> None:
    """Rows as one line each (never wrapped; on a terminal, cut to its width), then the summary table."""
    import shutil

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
        rows = doc["rows"]
        for k, cells in enumerate(rows.lines(WIDTHS), start=1):
            line = "  ".join(c.ljust(w) for c, w in zip(cells, WIDTHS, strict=False)) + "  " + cells[-1]
            chunk.append(_cut(line.rstrip(), width))
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
    for label, line in doc.get("calibrated", {}).items():  # where the terms came from, bounds hit said
        sys.stdout.write(f"calibrated {label}: {line}\n")


def _cut(line: str, width: int) -> str:
    return line if not width or len(line) <= width else line[: width - 1] + "…"


SUMMARY_COLS = ("hardware/engine", "rows", "predicted", "metric", "n", "median |err| %", "p90 |err| %")


def _print_summary(summary: dict[str, Any], title: str | None = None) -> None:
    """One line per (hardware/engine, metric) measured; columns that do not fit the width are left out, named."""
    from rich.console import Console

    from advisor.report.fitwidth import Col, fitted_table, say_dropped
    from advisor.report.units import plural

    names = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "output_tok_s": "tok/s"}
    cells = []
    for label, g in summary.items():
        shown: list[str | None] = [m for m in METRICS if g.get(m, {}).get("n")] or [None]
        for j, m in enumerate(shown):
            stats = g.get(m, {}) if m else {}
            cells.append([label if not j else "", f"{g.get('rows', 0):,}" if not j else "",
                          f"{g.get('predicted', 0):,}" if not j else "", names.get(m or "", "-"),
                          f"{stats.get('n', 0):,}", str(stats.get("median_abs_pct", "-")),
                          str(stats.get("p90_abs_pct", "-"))])
    cols = [Col(SUMMARY_COLS[0], 10, fold=True), Col("rows", 5, right=True), Col("predicted", 4, right=True),
            Col("metric", 9), Col("n", 8, right=True), Col("median |err| %", 9, right=True),
            Col("p90 |err| %", 7, right=True)]
    console = Console()
    head = "Summary: signed error of the predicted rows" + (f" ({title})" if title else "")
    table, dropped = fitted_table(console, head, cols, cells)
    console.print(table)
    say_dropped(console, dropped)
    rejected = summary.get("overall", {}).get("rejected_rows", 0)
    if rejected:
        console.print(f"{plural(rejected, 'row')} rejected (reasons in the rows above, or --json)", highlight=False)
