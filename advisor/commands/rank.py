"""`advisor rank [MODEL...]`: the best plan per model for an objective, ranked, with why and the command."""

from __future__ import annotations

import csv
import sys
from typing import Any

import typer

from advisor.commands import _options as opt
from advisor.commands._common import print_json, require
from advisor.errors import AdvisorError

CSV_COLUMNS = ("rank", "model", "plan", "fits", "score", "ttft_ms", "tpot_ms", "per_user_tok_s", "output_tok_s",
               "collectives_per_step", "allreduce_bytes_per_token", "kv_cache_tokens", "bottleneck", "reason",
               "command", "why")


def register(app: typer.Typer) -> None:
    @app.command()
    def rank(
        models: list[str] = typer.Argument(None, help="Models to compare (default: the whole catalog)."),
        objective: str = typer.Option("latency", "--objective", help="latency (one user's tok/s), throughput "
                                      "(total tok/s at --concurrency) or goodput (tok/s under the limits)."),
        concurrency: int = typer.Option(64, "--concurrency", help="Users for throughput/goodput."),
        input_len: int = typer.Option(1024, "--input-len", help="Prompt tokens per request."),
        output_len: int = typer.Option(1024, "--output-len", help="Generated tokens per request."),
        max_tpot_ms: float | None = typer.Option(None, "--max-tpot-ms", help="goodput: TPOT limit."),
        max_ttft_ms: float | None = typer.Option(None, "--max-ttft-ms", help="goodput: TTFT limit."),
        all_plans: bool = typer.Option(False, "--all-plans", help="List every valid plan of every model."),
        hw: str = opt.HW, gpus: int | None = opt.GPUS, max_model_len: int | None = opt.MAX_MODEL_LEN,
        kv_cache_dtype: str = opt.KV_DTYPE, gpu_memory_utilization: float = opt.UTIL,
        weight_dtype: str | None = opt.WEIGHT_DTYPE, engine: str = opt.ENGINE,
        calibration: str | None = opt.CALIBRATION, json_out: bool = opt.JSON,
        csv_out: bool = typer.Option(False, "--csv", help="Print CSV."),
        plot: str | None = typer.Option(None, "--plot", help="Write a PNG/SVG figure to this file."),
    ) -> None:
        """Rank models (and their best parallel plan) on this box; explain why; print the command to run."""
        from advisor.calibrate.store import terms_for
        from advisor.report.ranking import Query
        from advisor.report.ranking import rank as do_rank

        q = Query(objective, concurrency, input_len, output_len, max_tpot_ms, max_ttft_ms)
        _validate(q, json_out, csv_out, plot)
        profile = opt.hardware(hw, gpus)
        # models whose context is too short for the request are dropped below
        settings = opt.settings(max_model_len, kv_cache_dtype, gpu_memory_utilization, weight_dtype, engine,
                                input_len + output_len)
        resolved, unknown = _resolve_all(models)
        good = []
        for r in resolved:
            try:
                opt.check_lengths(r.arch.max_context, r.arch.model, input_len, output_len, concurrency,
                                  max_model_len)
                good.append(r)
            except AdvisorError as err:
                unknown.append({"model": r.arch.model, "fits": False, "reason": str(err)})
        terms, calibrated = terms_for(profile, engine, calibration)
        rows, unfit = do_rank(good, profile, settings, terms, q, calibrated, gpus, all_plans)
        if not rows:
            why = "; ".join(d["reason"] if d["reason"].startswith(d["model"]) else f"{d['model']}: {d['reason']}"
                            for d in unknown + unfit)
            raise AdvisorError(f"nothing to rank: {why}")
        if plot is not None:
            from advisor.report.plots import rank_figure, save

            save(rank_figure(rows, good, profile, settings, terms, q, gpus), plot)
        tail = [{**d, "rank": None} for d in unfit + unknown]
        if json_out:
            print_json(rows + tail)
        elif csv_out:
            _csv(rows + tail)
        else:
            from advisor.report.tables import rank_table

            rank_table(rows, tail, profile, q)


def _validate(q: Any, json_out: bool, csv_out: bool, plot: str | None) -> None:
    """Flag checks before any model is read: one line naming the flag (exit 2)."""
    require(q.objective in ("latency", "throughput", "goodput"), "--objective",
            f"{q.objective!r} is not latency, throughput or goodput")
    if q.objective != "goodput" and (q.max_tpot_ms is not None or q.max_ttft_ms is not None):
        raise AdvisorError(f"--max-tpot-ms/--max-ttft-ms only apply to --objective goodput, not {q.objective}")
    if q.objective == "goodput":
        require(q.max_tpot_ms is not None or q.max_ttft_ms is not None, "--objective goodput",
                "needs --max-tpot-ms and/or --max-ttft-ms")
    for flag, v in (("--max-tpot-ms", q.max_tpot_ms), ("--max-ttft-ms", q.max_ttft_ms)):
        require(v is None or v > 0, flag, f"{v} must be > 0")
    for flag, n in (("--concurrency", q.concurrency), ("--input-len", q.input_len), ("--output-len", q.output_len)):
        require(n >= 1, flag, f"{n} must be >= 1")  # global: checked once, before any model
    require(not (json_out and csv_out), "--json/--csv", "choose one output form")
    if plot is not None:
        require(plot.lower().endswith((".png", ".svg")), "--plot", f"{plot}: give a .png or .svg file name")


def _resolve_all(models: list[str] | None) -> tuple[list[Any], list[dict[str, Any]]]:
    from advisor import catalog
    from advisor.arch.sources import resolve

    resolved, unknown = [], []
    for ref in models or catalog.ids():
        try:
            resolved.append(resolve(ref))
        except AdvisorError as err:
            unknown.append({"model": ref, "fits": False, "reason": str(err)})
    return resolved, unknown


def _csv(rows: list[dict[str, Any]]) -> None:
    w = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    w.writeheader()
    for d in rows:
        w.writerow({**d, "plan": d.get("plan", {}).get("label") if d.get("plan") else ""})
