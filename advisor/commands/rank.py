"""`advisor rank [MODEL...]`: the best plan per model for an objective, ranked, with why and the command."""

from __future__ import annotations

import csv
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.commands import options as opt
from advisor.commands.output import emit
from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.cost.workload import Settings
    from advisor.decide.choose import Ranking, Unranked
    from advisor.decide.query import Objective, Query
    from advisor.hardware import HardwareProfile
    from advisor.resolve import Resolved

CSV_COLUMNS = ("rank", "model", "hardware", "plan", "fits", "score", "quality", "quality_benchmark", "quality_source",
               "ttft_ms", "tpot_ms", "per_user_tok_s", "output_tok_s",
               "collectives_per_step", "allreduce_bytes_per_token", "kv_cache_tokens", "bottleneck", "reason",
               "max_users_at_slo", "output_tok_s_at_slo", "binding_limit", "usd_per_mtok", "kwh_per_mtok", "replicas",
               "node_output_tok_s", "spec_tokens", "tokens_per_step", "command", "command_notes", "why")


def rank(
    models: opt.Models = None,
    objective: Annotated[str, typer.Option(
        "--objective", help="latency (one user's tok/s), throughput (total tok/s at --concurrency), goodput "
                            "(total tok/s within --max-tpot-ms/--max-ttft-ms, up to --concurrency users) or "
                            "best-under-slo (the highest-quality model within the targets at --concurrency users).")
    ] = "latency",
    concurrency: opt.Concurrency = opt.DEFAULT_CONCURRENCY, input_len: opt.InputLen = opt.DEFAULT_INPUT_LEN,
    output_len: opt.OutputLen = opt.DEFAULT_OUTPUT_LEN,
    max_tpot_ms: Annotated[float | None, typer.Option(
        "--max-tpot-ms", min=0.001, help="TPOT target (ms): each plan's most users within it (and goodput's limit).")
    ] = None,
    max_ttft_ms: Annotated[float | None, typer.Option(
        "--max-ttft-ms", min=0.001, help="TTFT target (ms): each plan's most users within it (and goodput's limit).")
    ] = None,
    gpu_hour_price: Annotated[list[float] | None, typer.Option(
        "--gpu-hour-price", min=0.0001, help="USD per GPU-hour: adds $ per million output tokens (no default price); "
                                             "once for every --hw, or once per --hw in the same order.")
    ] = None,
    quality: Annotated[str | None, typer.Option(
        "--quality", help="Quality scale: a published benchmark (default: the LMArena text score; `advisor inspect "
                          "MODEL` lists a model's scores).")] = None,
    quality_file: Annotated[str | None, typer.Option(
        "--quality-file", help="Your own evals: CSV with model, score[, benchmark]; replaces the published scale.")
    ] = None,
    min_quality: Annotated[float | None, typer.Option(
        "--min-quality", help="Rank only models scoring at least this on the scale (unknown: not ranked, said).")
    ] = None,
    all_plans: Annotated[bool, typer.Option("--all-plans", help="List every valid plan of every model.")] = False,
    hw: opt.HwMany = None, gpus: opt.Gpus = None, max_model_len: opt.MaxModelLen = None,
    kv_cache_dtype: opt.KvCacheDtype = "auto",
    gpu_memory_utilization: opt.GpuMemoryUtilization = None,
    weight_dtype: opt.WeightDtypeOpt = None, engine: opt.EngineOpt = "vllm", engine_version: opt.EngineVersion = None,
    calibration: opt.Calibration = None,
    speculative: opt.Speculative = "off", spec_tokens: opt.SpecTokens = None,
    spec_acceptance: opt.SpecAcceptance = None,
    json_out: opt.Json = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print CSV.")] = False,
    plot: Annotated[str | None, typer.Option("--plot", help="Write a PNG/SVG figure to this file.")] = None,
) -> None:
    """Rank models (and their best parallel plan) on this box; explain why; print the command to run."""
    from advisor.decide.query import Query
    from advisor.quality.facts import USER_SCALE, lookup, read_user_file, resolve_scale

    own = read_user_file(quality_file) if quality_file is not None else None
    if own is not None and quality is not None:
        raise AdvisorError("--quality/--quality-file: one scale at a time: your file, or a published benchmark")
    scale = next(iter(own.values())).benchmark if own else resolve_scale(quality)
    q = Query(**_query(objective, concurrency, input_len, output_len, max_tpot_ms, max_ttft_ms),
              quality_scale=scale if scale != USER_SCALE else f"{USER_SCALE} ({quality_file})",
              min_quality=min_quality)
    if json_out and csv_out:
        raise AdvisorError("--json/--csv: choose one output form")
    if plot is not None and not plot.lower().endswith((".png", ".svg")):
        raise AdvisorError(f"--plot: {plot}: give a .png or .svg file name")
    boxes = list(dict.fromkeys(hw or [opt.DEFAULT_HW]))
    if plot is not None and len(boxes) > 1:
        raise AdvisorError("--plot: draws one box; give one --hw")
    spec = opt.speculation(speculative, spec_tokens, spec_acceptance)
    settings = opt.settings(max_model_len, kv_cache_dtype, gpu_memory_utilization, weight_dtype, engine,
                            input_len + output_len, engine_version, spec if speculative == "mtp" else None)
    good, unknown = _candidates(models, q, max_model_len)
    scores = {r.arch.model: lookup(r.arch.model, scale, own) for r in good}
    prices = gpu_hour_price or []
    if len(prices) not in (0, 1, len(boxes)):
        raise AdvisorError(f"--gpu-hour-price: give one price, or one per --hw ({len(boxes)}), not {len(prices)}")
    ranking, profile = _rank_boxes(good, boxes, gpus, prices, engine, calibration, settings, q, scores, all_plans,
                                   spec if speculative == "auto" else None)
    ranking = replace(ranking, unranked=ranking.unranked + tuple(unknown))
    if not ranking.rows:
        why = "; ".join(d.reason if d.reason.startswith(d.model) else f"{d.model}: {d.reason}"
                        for d in ranking.unranked)
        raise AdvisorError(f"nothing to rank: {why}")
    if plot is not None:
        _draw(ranking, profile, settings, q, plot)
    if csv_out:
        _csv(ranking)
        return
    from advisor.report.tables import rank_table

    emit([*ranking.rows, *ranking.unranked], json_out, lambda _: rank_table(ranking, profile, boxes=len(boxes) > 1))


def _rank_boxes(good: list[Resolved], boxes: list[str], gpus: int | None, prices: list[float], engine: str,
                calibration: str | None, settings: Settings, q: Query, scores: dict[str, Any], all_plans: bool,
                auto_spec: dict[str, Any] | None) -> tuple[Ranking, HardwareProfile]:
    """Each box's ranking under its own terms and price (with MTP where `auto_spec` and it wins, per model),
    joined when there are several; and the last box's profile."""
    from advisor.calibrate.store import terms_for
    from advisor.decide.choose import best_of, joint
    from advisor.decide.choose import rank as do_rank

    rankings = []
    for j, box in enumerate(boxes):
        profile = opt.hardware(box, gpus)
        terms, calibrated = terms_for(profile, engine, calibration)
        price = prices[j] if len(prices) == len(boxes) else (prices[0] if prices else None)
        qb = q.model_copy(update={"gpu_hour_price": price})
        one = do_rank(good, profile, settings, terms, qb, calibrated, gpus, all_plans, scores)
        if auto_spec is not None:
            one = best_of(one, do_rank(good, profile, settings.model_copy(update=auto_spec), terms, qb, calibrated,
                                       gpus, all_plans, scores))
        rankings.append(one)
    return (rankings[0] if len(rankings) == 1 else joint(rankings)), profile


def _draw(ranking: Ranking, profile: HardwareProfile, settings: Settings, q: Query, plot: str) -> None:
    """The ranking's figure: quality against throughput for best-under-slo, else the ranking's own."""
    from advisor.report.plots import save

    if q.objective == "best-under-slo":
        from advisor.report.quality_plot import quality_figure

        save(quality_figure(ranking, profile), plot)
    else:
        from advisor.report.plots import rank_figure

        save(rank_figure(ranking, profile, settings), plot)


def _candidates(models: list[str] | None, q: Query, max_model_len: int | None
                ) -> tuple[list[Resolved], list[Unranked]]:
    """Models that resolve and whose context holds the request; the others with the reason."""
    from advisor.commands.models import problem, resolve_models
    from advisor.decide.choose import Unranked
    from advisor.errors import NotFound

    resolved, missing = resolve_models(models, warn=False)  # reported in the ranking itself
    unknown = [Unranked(model=ref, found=not isinstance(err, NotFound),
                        reason=problem(ref, err).removeprefix(f"{ref}: ")) for ref, err in missing.items()]
    good = []
    for r in resolved:
        try:
            opt.check_lengths(r.arch.max_context, r.arch.model, q.input_len, q.output_len, max_model_len)
            good.append(r)
        except AdvisorError as err:
            unknown.append(Unranked(model=r.arch.model, source=r.source, reason=str(err)))
    return good, unknown


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


def _csv(ranking: Ranking) -> None:
    w = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    w.writeheader()
    for d in [*ranking.rows, *ranking.unranked]:
        row = d.model_dump(mode="json")
        plan = row.get("plan")
        notes = " | ".join(row.get("command_notes", []))
        w.writerow({**row, "plan": plan["label"] if plan else "", "command_notes": notes})
