"""`advisor pareto MODEL...`: per-user speed against throughput per GPU over every valid plan and concurrency,
each model's frontier and operating point; a PNG/SVG figure with -o, the points with --json/--csv."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.commands import options as opt
from advisor.errors import AdvisorError


def pareto(
    models: opt.Models = None,
    hw: opt.Hw = opt.DEFAULT_HW, gpus: opt.Gpus = None, nodes: opt.Nodes = None, fabric: opt.FabricOpt = None,
    input_len: opt.InputLen = opt.DEFAULT_INPUT_LEN, output_len: opt.OutputLen = opt.DEFAULT_OUTPUT_LEN,
    max_tpot_ms: Annotated[float | None, typer.Option("--max-tpot-ms", min=0.001, help="TPOT target (ms).")] = None,
    max_ttft_ms: Annotated[float | None, typer.Option("--max-ttft-ms", min=0.001, help="TTFT target (ms).")] = None,
    max_model_len: opt.MaxModelLen = None, kv_cache_dtype: opt.KvCacheDtype = opt.DEFAULT_KV_CACHE_DTYPE,
    gpu_memory_utilization: opt.GpuMemoryUtilization = None, weight_dtype: opt.WeightDtypeOpt = None,
    engine: opt.EngineOpt = opt.DEFAULT_ENGINE, engine_version: opt.EngineVersion = None,
    moe_a2a: opt.MoeA2a = "default", two_batch_overlap: opt.TwoBatchOverlap = False,
    calibration: opt.Calibration = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write the figure (.png or .svg).")] = None,
    frontier_only: Annotated[bool, typer.Option("--frontier-only", help="--json/--csv: only frontier points.")
                             ] = False,
    json_out: opt.Json = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print the points as CSV.")] = False,
    mode: opt.ModeOpt = "agg",
) -> None:
    """Per-user tok/s vs total tok/s per GPU for every valid plan and concurrency: the frontier per model.

    Example: advisor pareto MiniMaxAI/MiniMax-M2.5 moonshotai/Kimi-K2.5 --max-tpot-ms 50 -o pareto.png"""
    from advisor.decide.candidates import candidates
    from advisor.decide.pareto import pareto as frontier_of
    from advisor.decide.query import Query
    from advisor.report.pareto_plot import write_figure
    from advisor.report.pareto_text import pareto_csv, pareto_lines
    from advisor.report.sink import emit, warn

    if json_out and csv_out:
        raise AdvisorError("--json/--csv: choose one output form")
    if frontier_only and not (json_out or csv_out):
        raise AdvisorError("--frontier-only: selects the points of --json/--csv (the text lists only frontier points "
                           "already)")
    if output is not None and not output.lower().endswith((".png", ".svg")):
        raise AdvisorError(f"-o: {output}: give a .png or .svg file name")
    if output is not None:
        opt.output_folder("-o", output)
    q = Query(objective="throughput", input_len=input_len, output_len=output_len, max_tpot_ms=max_tpot_ms,
              max_ttft_ms=max_ttft_ms)
    profile = opt.hardware(hw, gpus)
    settings = opt.settings(engine=engine, engine_version=engine_version, moe_a2a=moe_a2a,
                            tbo=two_batch_overlap, max_model_len=max_model_len,
                            kv_cache_dtype=kv_cache_dtype, gpu_memory_utilization=gpu_memory_utilization,
                            weight_dtype=weight_dtype,
                            need_tokens=input_len + output_len)
    if opt.mode(mode) != "agg":  # the disaggregated frontier, beside the aggregated one with auto
        from advisor.commands.disagg import pareto_modes
        from advisor.decide.disagg_rank import Where

        return pareto_modes(models, q, Where(hw=profile, settings=settings, cluster=opt.cluster(
            profile, nodes, fabric, gpus), gpus=gpus, calibration=calibration), mode, max_model_len,
                            {"output": output, "frontier_only": frontier_only, "csv": csv_out, "json": json_out})
    good, unknown = candidates(models, q, max_model_len)
    for u in unknown:
        warn(f"{u.model}: {u.reason}")
    front = frontier_of(good, q, profile, settings, gpus, calibration, opt.cluster(profile, nodes, fabric, gpus))
    if output is not None:
        write_figure(front, profile.id, engine, output)
    points = [p for p in front.points if p.frontier or not frontier_only]
    if csv_out:
        pareto_csv(points)
        return
    emit(points, json_out, lambda _: pareto_lines(front, output))
