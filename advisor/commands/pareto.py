"""`advisor pareto MODEL...`: per-user speed against throughput per GPU over every valid plan and concurrency,
each model's frontier and operating point; a PNG/SVG figure with -o, the points with --json/--csv."""

from __future__ import annotations

import csv
import sys
from typing import Annotated

import typer

from advisor.commands import options as opt
from advisor.commands.output import emit
from advisor.errors import AdvisorError

CSV_COLUMNS = ("model", "hardware", "plan", "gpus", "concurrency", "per_user_tok_s", "output_tok_s_per_gpu",
               "tpot_ms", "ttft_ms", "frontier", "meets", "operating")


def pareto(
    models: opt.Models = None,
    hw: opt.Hw = opt.DEFAULT_HW, gpus: opt.Gpus = None,
    input_len: opt.InputLen = opt.DEFAULT_INPUT_LEN, output_len: opt.OutputLen = opt.DEFAULT_OUTPUT_LEN,
    max_tpot_ms: Annotated[float | None, typer.Option("--max-tpot-ms", min=0.001, help="TPOT target (ms).")] = None,
    max_ttft_ms: Annotated[float | None, typer.Option("--max-ttft-ms", min=0.001, help="TTFT target (ms).")] = None,
    max_model_len: opt.MaxModelLen = None, kv_cache_dtype: opt.KvCacheDtype = "auto",
    gpu_memory_utilization: opt.GpuMemoryUtilization = None, weight_dtype: opt.WeightDtypeOpt = None,
    engine: opt.EngineOpt = "vllm", engine_version: opt.EngineVersion = None, calibration: opt.Calibration = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the figure (.png or .svg).")] = None,
    frontier_only: Annotated[bool, typer.Option("--frontier-only", help="--json/--csv: only frontier points.")
                             ] = False,
    json_out: opt.Json = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print the points as CSV.")] = False,
) -> None:
    """Per-user tok/s vs total tok/s per GPU for every valid plan and concurrency: the frontier per model.

    Example: advisor pareto MiniMaxAI/MiniMax-M2.5 moonshotai/Kimi-K2.5 --max-tpot-ms 50 -o pareto.png"""
    import numpy as np

    from advisor.calibrate.store import terms_for
    from advisor.commands.rank import _candidates
    from advisor.cost.sweep import all_cases, evaluate
    from advisor.decide.pareto import frontier
    from advisor.decide.query import GRID, Query

    if json_out and csv_out:
        raise AdvisorError("--json/--csv: choose one output form")
    if output is not None and not output.lower().endswith((".png", ".svg")):
        raise AdvisorError(f"-o: {output}: give a .png or .svg file name")
    q = Query(objective="throughput", input_len=input_len, output_len=output_len, max_tpot_ms=max_tpot_ms,
              max_ttft_ms=max_ttft_ms)
    profile = opt.hardware(hw, gpus)
    settings = opt.settings(max_model_len, kv_cache_dtype, gpu_memory_utilization, weight_dtype, engine,
                            input_len + output_len, engine_version)
    good, unknown = _candidates(models, q, max_model_len)
    for u in unknown:
        print(f"advisor: warning: {u.model}: {u.reason}", file=sys.stderr)
    cases = [c for r in good for c in all_cases(r.arch, profile, settings, gpus, r.source) if c.runs]
    if not cases:
        raise AdvisorError("nothing to draw: no model has a plan that runs on this box")
    terms, calibrated = terms_for(profile, engine, calibration)
    sweep = evaluate(cases, profile, settings, terms, np.array(GRID, dtype=float), np.array([input_len]),
                     np.array([output_len]), calibrated)
    front = frontier(sweep, q)
    if output is not None:
        from advisor.report.pareto_plot import pareto_figure
        from advisor.report.plots import save

        save(pareto_figure(front, f"{profile.id}: {input_len} in / {output_len} out, {engine}"),
             output)
    points = [p for p in front.points if p.frontier or not frontier_only]
    if csv_out:
        w = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for p in points:
            w.writerow(p.model_dump())
        return
    emit(points, json_out, lambda _: _print(front, output))


def _print(front: object, output: str | None) -> None:
    from advisor.decide.pareto import Frontier

    assert isinstance(front, Frontier)
    for model in front.models():
        mine = [p for p in front.points if p.model == model]
        edge = sorted((p for p in mine if p.frontier), key=lambda p: -p.output_tok_s_per_gpu)
        op = next((p for p in mine if p.operating), None)
        where = (f"operating point {op.plan} at {op.concurrency:,} users: {op.output_tok_s_per_gpu:,.0f} tok/s per "
                 f"GPU, {op.per_user_tok_s:,.1f} tok/s per user" if op else "no point within the targets")
        print(f"{model}: {len(edge)} frontier points of {len(mine)}; {where}")
        for p in edge:
            print(f"   {p.plan:14s} {p.concurrency:5,d} users  {p.per_user_tok_s:8.1f} tok/s/user  "
                  f"{p.output_tok_s_per_gpu:9.1f} tok/s/GPU{'' if p.meets else '  (misses the targets)'}")
    if output:
        print(f"figure: {output}")
