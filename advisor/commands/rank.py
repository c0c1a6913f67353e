"""`advisor rank [MODEL...]`: the best plan per model for an objective, ranked, with why and the command."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.commands import options as opt
from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.decide.query import Objective
    from advisor.quality.facts import Quality


ObjectiveOpt = Annotated[str | None, typer.Option(
    "--objective", show_default=False,
    help="latency (one user's tok/s; the default), throughput (total tok/s at --concurrency; the default when "
         "--concurrency is given), goodput (total tok/s within --max-tpot-ms/--max-ttft-ms, up to --concurrency "
         "users) or best-under-slo (the highest-quality model within the targets at --concurrency users).")]
RankConcurrency = Annotated[int | None, typer.Option(
    "--concurrency", min=1, show_default=False,
    help="Concurrent users (closed loop) of the whole deployment; alone, it ranks throughput at that load (default "
         "64 for throughput, goodput and best-under-slo; latency is one user).")]
MaxTpot = Annotated[float | None, typer.Option(
    "--max-tpot-ms", min=0.001, help="TPOT target (ms): each plan's most users within it (and goodput's limit).")]
MaxTtft = Annotated[float | None, typer.Option(
    "--max-ttft-ms", min=0.001, help="TTFT target (ms): each plan's most users within it (and goodput's limit).")]
GpuHourPrice = Annotated[list[float] | None, typer.Option(
    "--gpu-hour-price", min=0.0001, help="USD per GPU-hour: adds $ per million output tokens (no default price); "
                                         "once for every --hw, or once per --hw in the same order.")]
QualityOpt = Annotated[str | None, typer.Option(
    "--quality", help="Quality scale: a published benchmark (default: the LMArena text score; `advisor inspect "
                      "MODEL` lists a model's scores).")]
QualityFile = Annotated[str | None, typer.Option(
    "--quality-file", help="Your own evals: CSV with model, score[, benchmark]; replaces the published scale.")]
MinQuality = Annotated[float | None, typer.Option(
    "--min-quality", help="Rank only models scoring at least this on the scale (unknown: not ranked, said).")]
AllPlans = Annotated[bool, typer.Option("--all-plans", help="List every valid plan of every model.")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV.")]
PlotOpt = Annotated[str | None, typer.Option("--plot", help="Write a PNG/SVG figure to this file.")]


def rank(
    models: opt.Models = None, objective: ObjectiveOpt = None,
    concurrency: RankConcurrency = None, input_len: opt.InputLen = opt.DEFAULT_INPUT_LEN,
    output_len: opt.OutputLen = opt.DEFAULT_OUTPUT_LEN, max_tpot_ms: MaxTpot = None, max_ttft_ms: MaxTtft = None,
    gpu_hour_price: GpuHourPrice = None, quality: QualityOpt = None, quality_file: QualityFile = None,
    min_quality: MinQuality = None, all_plans: AllPlans = False,
    hw: opt.HwMany = None, gpus: opt.Gpus = None, nodes: opt.Nodes = None, fabric: opt.FabricOpt = None,
    max_model_len: opt.MaxModelLen = None,
    kv_cache_dtype: opt.KvCacheDtype = opt.DEFAULT_KV_CACHE_DTYPE,
    gpu_memory_utilization: opt.GpuMemoryUtilization = None,
    weight_dtype: opt.WeightDtypeOpt = None, engine: opt.EngineOpt = opt.DEFAULT_ENGINE,
    engine_version: opt.EngineVersion = None, moe_a2a: opt.MoeA2a = "default",
    two_batch_overlap: opt.TwoBatchOverlap = False,
    calibration: opt.Calibration = None,
    speculative: opt.Speculative = "off", spec_tokens: opt.SpecTokens = None,
    spec_acceptance: opt.SpecAcceptance = None,
    json_out: opt.Json = False,
    csv_out: CsvOpt = False, plot: PlotOpt = None, mode: opt.ModeOpt = "agg",
) -> None:
    """Rank models (and their best parallel plan) on this box; explain why; print the command to run."""
    from advisor.decide.candidates import candidates
    from advisor.decide.query import Query
    from advisor.decide.ranking import RankRequest, rank_models
    from advisor.report.plots import write_rank_figure
    from advisor.report.rank_csv import rank_csv
    from advisor.report.sink import emit
    from advisor.report.tables import rank_table

    asked, (objective, concurrency) = objective, _load(objective, concurrency)
    own, scale, label = _scale(quality, quality_file)
    q = Query(**_query(objective, concurrency, input_len, output_len, max_tpot_ms, max_ttft_ms), quality_scale=label,
              min_quality=min_quality)
    boxes = _boxes(hw, json_out, csv_out, plot)
    spec = opt.speculation(speculative, spec_tokens, spec_acceptance)
    settings = opt.settings(engine=engine, engine_version=engine_version, moe_a2a=moe_a2a, rank=True,
                            tbo=two_batch_overlap, max_model_len=max_model_len,
                            kv_cache_dtype=kv_cache_dtype, gpu_memory_utilization=gpu_memory_utilization,
                            weight_dtype=weight_dtype,
                            need_tokens=input_len + output_len, spec=spec if speculative == "mtp" else None)
    if opt.mode(mode) != "agg":  # disaggregated serving compared (`commands/disagg.py`)
        from advisor.commands.disagg import rank_modes_flags

        return rank_modes_flags(models, q, boxes, settings, mode, max_model_len, json_out, calibration, gpus,
                                opt.cluster(opt.hardware(boxes[0], gpus), nodes, fabric, gpus),
                                {"--objective": asked not in (None, "latency", "goodput"), "--all-plans": all_plans,
                                 "--csv": csv_out, "--plot": plot is not None, "--gpu-hour-price": bool(gpu_hour_price),
                                 "--speculative": speculative != "off", "--quality-file": quality_file is not None,
                                 "--moe-a2a auto": moe_a2a == "auto",
                                 "--min-quality": min_quality is not None, "--hw": len(boxes) > 1})
    good, unknown = candidates(models, q, max_model_len)
    prices = gpu_hour_price or []
    if len(prices) not in (0, 1, len(boxes)):
        raise AdvisorError(f"--gpu-hour-price: give one price, or one per --hw ({len(boxes)}), not {len(prices)}")
    profiles = tuple(opt.hardware(box, gpus) for box in boxes)
    req = RankRequest(query=q, settings=settings, boxes=profiles, quality_scale=scale, prices=tuple(prices),
                      calibration=calibration, gpus=gpus, all_plans=all_plans, own_scores=own,
                      auto_spec=spec if speculative == "auto" else None, auto_a2a=moe_a2a == "auto",
                      clusters=tuple(opt.cluster(p, nodes, fabric, gpus) for p in profiles))
    ranking = rank_models(req, good, unknown)
    if plot is not None:
        write_rank_figure(ranking, profiles[-1], settings, plot)
    if csv_out:
        rank_csv(ranking)
        return
    emit([*ranking.rows, *ranking.unranked], json_out,
         lambda _: rank_table(ranking, profiles[-1], boxes=len(boxes) > 1))


def _load(objective: str | None, concurrency: int | None) -> tuple[str, int]:
    """The objective and the load: --concurrency alone ranks throughput at that load (a load was asked for, and
    throughput is the objective that ranks at one without targets); no flag, one user's speed; --objective latency
    with --concurrency says on stderr that latency is one user's speed and the load is not used."""
    from advisor.report.sink import warn

    if objective == "latency" and concurrency is not None:
        warn(f"--concurrency {concurrency}: not used by --objective latency, which ranks one user's speed; "
             "--objective throughput ranks at that load")
    if objective is None:
        objective = "latency" if concurrency is None else "throughput"
    return objective, concurrency if concurrency is not None else opt.DEFAULT_CONCURRENCY


def _query(objective: str, concurrency: int, input_len: int, output_len: int, max_tpot_ms: float | None,
           max_ttft_ms: float | None) -> dict[str, Any]:
    """Flag checks before any model is read: one line naming the flag (exit 2)."""
    from advisor.decide.query import OBJECTIVES

    if objective not in OBJECTIVES:
        raise AdvisorError(f"--objective: {objective!r} is not {', '.join(OBJECTIVES)}")
    limits = max_tpot_ms is not None or max_ttft_ms is not None
    if objective in ("goodput", "best-under-slo") and not limits:
        raise AdvisorError(f"--objective {objective}: needs --max-tpot-ms and/or --max-ttft-ms")
    obj: Objective = objective  # type: ignore[assignment]
    return {"objective": obj, "concurrency": concurrency, "input_len": input_len, "output_len": output_len,
            "max_tpot_ms": max_tpot_ms, "max_ttft_ms": max_ttft_ms}


def _scale(quality: str | None, quality_file: str | None) -> tuple[dict[str, Quality] | None, str, str]:
    """--quality/--quality-file: the user's own scores (or None), the scale they are read on, and its name for
    the ranking (the file named when it is the user's)."""
    from advisor.quality.facts import USER_SCALE, read_user_file, resolve_scale

    own = read_user_file(quality_file) if quality_file is not None else None
    if own is not None and quality is not None:
        raise AdvisorError("--quality/--quality-file: one scale at a time: your file, or a published benchmark")
    scale = next(iter(own.values())).benchmark if own else resolve_scale(quality)
    return own, scale, scale if scale != USER_SCALE else f"{USER_SCALE} ({quality_file})"


def _boxes(hw: list[str] | None, json_out: bool, csv_out: bool, plot: str | None) -> list[str]:
    """The --hw boxes (each once, in order), after the output flags are checked against each other."""
    if json_out and csv_out:
        raise AdvisorError("--json/--csv: choose one output form")
    if plot is not None and not plot.lower().endswith((".png", ".svg")):
        raise AdvisorError(f"--plot: {plot}: give a .png or .svg file name")
    if plot is not None:
        opt.output_folder("--plot", plot)
    boxes = list(dict.fromkeys(hw or [opt.DEFAULT_HW]))
    if plot is not None and len(boxes) > 1:
        raise AdvisorError("--plot: draws one box; give one --hw")
    return boxes
