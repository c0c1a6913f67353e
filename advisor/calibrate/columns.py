"""The measurement schema (`advisor check --help`): its columns, which are required, which are measured."""

from __future__ import annotations

COLUMNS: tuple[str, ...] = (
    "model",
    "hardware",
    "engine",
    "engine_version",
    "weight_dtype",
    "tp",
    "pp",
    "dp",
    "ep",
    "spec_tokens",
    "spec_accept_len",
    "kv_cache_dtype",
    "length_ratio",
    "batch_wait_iters",
    "batch_wait_ratio",
    "recv_interval",
    "async_scheduling",
    "adp_timeout_iters",
    "adp_batching_wait_iters",
    "mem_fraction",
    "top_p",
    "concurrency",
    "input_len",
    "output_len",
    "ttft_ms",
    "tpot_ms",
    "output_tok_s",
    "source",
)
# what a run was configured with, shared by its measured points: every column before the first per-point one
CONFIG: tuple[str, ...] = COLUMNS[:COLUMNS.index("concurrency")]
REQUIRED_COLUMNS: tuple[str, ...] = ("model", "hardware", "tp", "concurrency")
METRICS: tuple[str, ...] = ("ttft_ms", "tpot_ms", "output_tok_s")
