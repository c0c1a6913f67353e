"""`advisor check MEASUREMENTS...`: predict every measured row and report signed % errors and a summary
(`calibrate/check.py` computes them, `report/check_table.py` writes them)."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.commands import options as opt


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
    mem_fraction (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static; empty = the default), top_p (the
    requests' nucleus, the client's or the model's generation config the engine applied; vLLM 0.11-0.16 sort the
    vocabulary for it every step; empty = greedy or unfiltered), concurrency, input_len, output_len, ttft_ms,
    tpot_ms, output_tok_s, source. model, hardware, tp and concurrency are required, and at least one of ttft_ms,
    tpot_ms, output_tok_s. A `vllm bench serve --save-result` JSON is read too; the condition flags fill what a file
    does not hold (it has no hardware or plan). With --json the rows are written one per line as they are computed;
    a number that is not finite (an error against a measurement of ~0) is null. The summary ends with the rows not
    predicted and why (--json: unpredicted, reason -> rows). Nothing to check (a header only, every row rejected or
    unpredictable) or a --hw or --model that names nothing: one line and exit 2.

    A disaggregated measurement CSV (x prefill and y decode workers joined by a KV-cache transfer, as
    tests/data/bench/silicon_disagg_dev.csv) is told by its pool columns and each row is predicted at its own
    pools: model, hardware, engine, weight_dtype, concurrency, input_len, output_len, then per pool
    (prefill_*, decode_*): workers, tp, pp, attention_dp, moe_tp, moe_ep (each worker's plan), batch,
    redundant_experts, mem_fraction, moe_a2a, max_batch, recv_interval (what the recipe passed: EPLB slots,
    memory fraction, deepep, requests a rank admits, SGLang's --scheduler-recv-interval); nodes
    (empty: as many as the pools need), ttft_ms, tpot_ms, spec_decoding and spec_tokens (a speculative row is not
    predicted), plan_status, repeat_of (a repeat of another row is counted once), source. model, hardware,
    input_len, output_len, prefill_workers and decode_workers are required columns; a row missing one pool says
    why, and when no row can be predicted because one misses a pool, that is an error (exit 2). Every column:
    docs/measurements.md. Aggregated and disaggregated files are checked in separate runs.
    Example: advisor check advisor/examples/case_study.csv"""
    from advisor.calibrate.check import check_files
    from advisor.report.check_table import show_check
    from advisor.report.progress import Progress

    defaults = opt.measurement_defaults(model=model, hardware=hw, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep,
                                        concurrency=concurrency, weight_dtype=weight_dtype)
    from advisor.commands.disagg import check_disagg_cmd

    if check_disagg_cmd(measurements, calibration, defaults, json_out, summary):  # disaggregated rows
        return
    with Progress("advisor check") as progress:
        result = check_files(measurements, calibration, defaults, progress.update)
        show_check(result, json_out, summary, progress)
