"""The disaggregated measurement schema (tests/data/bench/silicon_disagg_dev.csv): its columns and what each means.

Read by `calibrate/disagg_predict.py` (`advisor check` and `advisor calibrate` take such files); aggregated rows are
read as before (`columns.py`, `measurements.py`). One row is one measured point of a deployment that splits prefill
and decode into two pools of workers joined by a KV-cache transfer. Each pool is `<side>_workers` workers with one
plan each, in aiconfigurator's cells (its `silicon_sample.csv`): GPUs per worker = tp x attention_dp x pp, and the
MoE layers are split over the same GPUs as moe_tp x moe_ep. DEP8 (attention data-parallel over 8 GPUs, experts over
8) is tp 1, attention_dp 8, moe_tp 1, moe_ep 8; TEP8 is tp 8, attention_dp 1, moe_tp 1, moe_ep 8; TP8 is tp 8,
moe_tp 8, moe_ep 1. How the cells were recovered where the source left them empty is in tests/data/bench/README.md
("Disaggregated runs").
"""

from __future__ import annotations

_SIDE = {
    "workers": "Workers (engine instances) in the {side} pool.",
    "tp": "Attention tensor-parallel size of each {side} worker.",
    "pp": "Pipeline-parallel stages of each {side} worker.",
    "attention_dp": "Attention data-parallel ranks of each {side} worker (1: none).",
    "moe_tp": "Tensor-parallel split of each expert inside a {side} worker; moe_tp x moe_ep = tp x attention_dp "
              "(0: not stated, dense models and some vLLM rows).",
    "moe_ep": "Expert-parallel size inside a {side} worker (0: not stated).",
    "batch": "{batch}",
    "redundant_experts": "Redundant expert slots each {side} worker placed beside the model's experts, as its recipe "
                         "passes them (SGLang --ep-num-redundant-experts; 0: none; empty: not established, none "
                         "modelled): the MoE runs as experts + slots (`arch/redundant.py`).",
    "mem_fraction": "The {side} workers' memory fraction as the recipe passes it (SGLang --mem-fraction-static, "
                    "vLLM --gpu-memory-utilization); empty: the engine's own default.",
    "moe_a2a": "The {side} workers' MoE all-to-all as the recipe passes it: deepep (SGLang --moe-a2a-backend deepep "
               "or --enable-deepep-moe), none (its default all-gather / reduce-scatter); empty: not established, "
               "the engine's default modelled.",
    "max_batch": "The most requests each {side} rank admits, as the recipe passes it (TensorRT-LLM "
                 "max_batch_size, read by `scripts/recipe_batches.py`); empty: not established, the engine's default "
                 "modelled. Users beyond workers x ranks x this wait for a slot.",
    "recv_interval": "How many scheduler iterations the {side} workers let pass between looks for new requests, as "
                     "the recipe passes it (SGLang --scheduler-recv-interval, `managers/scheduler_recv_skipper.py`); "
                     "empty: not established, every iteration (1) modelled. A decode worker pre-allocates a "
                     "request's KV, which its prefill waits for, only when it looks.",
}
_BATCH = {
    "prefill": "Requests per prefill step as the source counts them (1 in every row it records; recovered rows: 1).",
    "decode": "Requests per decode rank at this concurrency: concurrency / (decode_workers x decode ranks per worker) "
              "rounded up, the source's own decode_batch_size (every recorded row with a concurrency satisfies it).",
}


def _side(side: str) -> dict[str, str]:
    return {f"{side}_{k}": v.format(side=side, batch=_BATCH[side]) for k, v in _SIDE.items()}


# Column -> meaning, in file order.
MEANING: dict[str, str] = {
    "model": "The checkpoint, as in the aggregated schema (the source labels some DeepSeek-R1 runs DeepSeek-V3).",
    "hardware": "A hardware profile id; the GPUs of one worker may span nodes (GB200/GB300 trays of 4 in one NVL72 "
                "NVLink domain, or 8-GPU nodes over the scale-out network).",
    "engine": "The engine of both pools: vllm, sglang or trtllm.",
    "engine_version": "The engine release the run used; for runs in a Dynamo runtime image, the release that image "
                      "ships (TensorRT-LLM: the map in research/disagg_recover.py: DYNAMO_TRTLLM); empty: unknown.",
    "dynamo_version": "The Dynamo release of the run's runtime image, or that the source wrote as engine_version; "
                      "empty: not run in a Dynamo image.",
    "weight_dtype": "The weight format, as in the aggregated schema (nvfp4, fp8).",
    "spec_decoding": "Speculative decoding of the configuration that ran: none or mtp (TensorRT-LLM MTP, SGLang "
                     "EAGLE on the MTP layers); empty: unknown or unsettled.",
    "spec_tokens": "Tokens drafted per step where the configuration names it (0 with none); empty: unknown.",
    "concurrency": "Users the benchmark kept in flight, across all decode workers.",
    "input_len": "Prompt tokens per request (the benchmark's stated length).",
    "output_len": "Output tokens per request (the benchmark's stated length).",
    "length_ratio": "How the benchmark drew each request's lengths, as in the aggregated schema: uniformly between "
                    "length_ratio x and 1 x the stated ones (0.8: InferenceX's sa-bench, `--random-range-ratio`); 1: "
                    "exactly the stated lengths (the aic-auto-gap-analysis runs); empty: not known, the stated "
                    "lengths predicted.",
    **_side("prefill"),
    **_side("decode"),
    "total_gpus": "GPUs of both pools: sum of workers x tp x attention_dp x pp.",
    "nodes": "Nodes the pools occupy, each worker on whole nodes of the hardware (a GB200 tray holds 4 GPUs, a "
             "B200/B300/H100 node 8); a GB200/GB300 deployment of at most 18 trays fits one NVL72 rack.",
    "ttft_ms": "Measured mean time to first token, ms.",
    "tpot_ms": "Measured mean time per output token after the first, ms.",
    "plan_status": "recorded (the source records worker counts and plans), recovered (found by plan_rule) or "
                   "unsettled (unsettled_reason says why); the pools of an unsettled row are empty.",
    "plan_rule": "source, same-run (copied from another row of the same run that records it), config (the one "
                 "deployment of the InferenceX configurations in force on the measurement date that holds the "
                 "point), no-config or several-configs.",
    "unsettled_reason": "Why the deployment could not be settled; empty otherwise.",
    "repeat_of": "The source id of the row that is the same run (same hardware, engine, lengths, concurrency, TTFT "
                 "and TPOT); every run is counted once by skipping rows that name one.",
    "notes": "Caveats of this row (speculative decoding or engine release not settled, ...).",
    "config_ref": "The InferenceX configurations the row matches: file@commit, config key and recipe.",
    "image": "The container image, from the source's silicon_data_source or the matching configuration.",
    "measured": "The measurement date (the source's silicon_data_source).",
    "source_cells": "The source's plan cells where they were not the deployment (prefill= and decode= "
                    "tp/pp/attention_dp/moe_tp/moe_ep), for rows whose cells were replaced.",
    "source": "Where the row came from: `ai-dynamo/aiconfigurator silicon_sample.csv id=<the source's row id>`.",
}
COLUMNS: tuple[str, ...] = tuple(MEANING)
REQUIRED: tuple[str, ...] = ("model", "hardware", "engine", "input_len", "output_len", "plan_status", "source")
# the columns a file `advisor check` reads must have (a user's own rows need no plan_status or source; an empty
# engine cell is vLLM): the request, and both pools' worker counts
READ_REQUIRED: tuple[str, ...] = ("model", "hardware", "input_len", "output_len", "prefill_workers",
                                  "decode_workers")
METRICS: tuple[str, ...] = ("ttft_ms", "tpot_ms")
PLAN_STATUS: tuple[str, ...] = ("recorded", "recovered", "unsettled")
