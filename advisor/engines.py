"""The serving engines the advisor speaks of, the releases whose memory accounting it models, and the engine
defaults it assumes, named once.

Light on purpose (no numpy/pydantic): the CLI's options import it at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Literal

# engines the cost model predicts, prints commands for, and a measurement or a calibration may name
Engine = Literal["vllm", "sglang", "trtllm"]

KvDtype = Literal["auto", "bf16", "fp8"]
WeightDtype = Literal["bf16", "fp8", "int4", "nvfp4", "mxfp4"]

DEFAULT_ENGINE: Engine = "vllm"
DEFAULT_KV_CACHE_DTYPE: KvDtype = "auto"  # the engine's own pick (`cost/engine_args.py: kv_dtype_for`)
# A serving context a user typically asks for; the model's own maximum is often 128k-1M tokens, more KV
# than a box holds at any useful concurrency. The printed command passes it explicitly.
DEFAULT_MAX_MODEL_LEN = 32768
DEFAULT_CONCURRENCY = 64
DEFAULT_INPUT_LEN = 1024
DEFAULT_OUTPUT_LEN = 1024
# TensorRT-LLM `llmapi/llm_args.py: AttentionDpConfig.batching_wait_iters`: Field(default=10), the steps attention-DP
# balancing holds context requests once every rank has one (`cost/serving.py: adp_balance_wait_steps`)
TRTLLM_ADP_BATCHING_WAIT_ITERS = 10

# vLLM's `--async-scheduling` became the default in v0.14.0 (PR #27614, `vllm/config/scheduler.py:
# SchedulerConfig.async_scheduling`); SGLang's overlap scheduler and TensorRT-LLM's overlap loop are on by default
VLLM_ASYNC_SCHEDULING_SINCE = 14


def scheduled_ahead(engine: str, version: str | None = None) -> int:
    """Steps an engine's scheduler prepares ahead of the GPU: 1 when it schedules step N + 1 while step N runs
    (vLLM `AsyncScheduler` with `EngineCore.step_with_batch_queue`, from v0.14 by default; SGLang
    `Scheduler.event_loop_overlap`; TensorRT-LLM `PyExecutor._executor_loop_overlap`), 0 before (vLLM < 0.14).
    A version that does not parse (not stated, a nightly) is taken as a current release."""
    if engine != "vllm":
        return 1
    m = re.match(r"v?0\.(\d+)", (version or "").strip())
    return 0 if m and int(m.group(1)) < VLLM_ASYNC_SCHEDULING_SINCE else 1


Sampler = Literal["sort", "triton", "v2"]
Printed = Literal["blocks", "concurrency"]


@dataclass(frozen=True)
class Release:
    """A span of engine releases (minor versions `first`..`last` of `major`) that account memory the same way.

    `sampler`: how the start-up profile's sampler warm-up holds the logits (see `cost/budget.py`);
    `graph_estimate`: the CUDA-graph memory estimate is subtracted from the KV budget by default;
    `printed`: how "GPU KV cache size: N tokens" is computed; `big_tier_gib`: devices of at least this much
    memory get max_num_batched_tokens 16384 (None: no such tier)."""

    engine: Engine
    first: int
    last: int
    gpu_memory_utilization: float
    sampler: Sampler
    graph_estimate: bool
    printed: Printed
    big_tier_gib: int | None
    source: str
    major: int = 0

    @property
    def name(self) -> str:
        m = self.major
        return f"{m}.{self.first}" if self.first == self.last else f"{m}.{self.first}-{m}.{self.last}"


# vLLM, from the release wheels' sources (vllm==X, file:function); each row says what changed at `first`.
VLLM_RELEASES: tuple[Release, ...] = (
    Release("vllm", 11, 16, 0.9, "sort", False, "blocks", None,
            "v0.11.0 gpu_worker.py:init_device takes the memory snapshot after NCCL init; "
            "v1/sample/ops/topk_topp_sampler.py:apply_top_k_top_p sorts the full vocabulary (to v0.16.0); "
            "config/cache.py gpu_memory_utilization 0.9; CUDA graphs captured after the KV cache is allocated"),
    Release("vllm", 17, 19, 0.9, "triton", False, "blocks", None,
            "v0.17.1 topk_topp_sampler.py:apply_top_k_top_p calls topk_topp_triton.apply_top_k_top_p_triton for "
            ">= 8 rows (in place); v0.18.1/v0.19.1 envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default 0"),
    Release("vllm", 20, 21, 0.92, "triton", True, "blocks", None,
            "v0.20.0 config/cache.py gpu_memory_utilization Field(default=0.92); envs.py "
            "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default 1, gpu_worker.py:determine_available_memory "
            "subtracts gpu_model_runner.py:profile_cudagraph_memory"),
    Release("vllm", 22, 29, 0.92, "triton", True, "concurrency", None,
            "v0.22.0 v1/core/kv_cache_utils.py:get_kv_cache_capacity prints int(max_concurrency * max_model_len)"),
    Release("vllm", 30, 33, 0.92, "v2", True, "concurrency", 160,
            "v0.30.0 config/vllm.py:use_v2_model_runner defaults to the V2 runner (v1/worker/gpu/sample/"
            "sampler.py); engine/arg_utils.py 16384/1024 batch defaults for devices >= 160 GiB; capture sizes "
            "up to 1024 on data-center Blackwell (config/vllm.py:_set_cudagraph_sizes)"),
)
# SGLang: v0.5.23 srt/arg_groups/memory_hook.py:handle_gpu_memory_settings (mem_fraction_static heuristic) and
# srt/mem_cache/kv_cache_configurator.py:_profile_available_bytes (KV = free - pre-load free x (1 - fraction)).
SGLANG_RELEASES: tuple[Release, ...] = (
    Release("sglang", 5, 5, 0.0, "v2", False, "blocks", None,
            "sglang v0.5.23 memory_hook.py:handle_gpu_memory_settings, kv_cache_configurator.py:"
            "_profile_available_bytes"),
)
# TensorRT-LLM's PyTorch backend: a profile run of max_num_tokens, then KV = free_gpu_memory_fraction (0.9) x
# (device total - peak torch memory - memory outside torch) (`_torch/pyexecutor/_util.py: KvCacheCreator.
# _cal_max_memory`, `llmapi/llm_args.py: KvCacheConfig.free_gpu_memory_fraction`; `cost/budget.py: trtllm_budget`).
TRTLLM_RELEASES: tuple[Release, ...] = (
    Release("trtllm", 0, 2, 0.9, "v2", True, "blocks", None,
            "TensorRT-LLM 1.0-1.2 _torch/pyexecutor/_util.py:KvCacheCreator (profile run, _cal_max_memory); "
            "llmapi/llm_args.py KvCacheConfig.free_gpu_memory_fraction 0.9, max_batch_size 2048, "
            "max_num_tokens 8192", major=1),
)
DEFAULT_ENGINE_VERSION: dict[str, str] = {"vllm": "0.33", "sglang": "0.5", "trtllm": "1.2"}
_TABLES = {"vllm": VLLM_RELEASES, "sglang": SGLANG_RELEASES, "trtllm": TRTLLM_RELEASES}
ENGINE_VERSION_HELP = (
    "Engine release whose memory accounting and defaults to model, MAJOR.MINOR[.PATCH]. vLLM 0.11-0.33 "
    "(default 0.33: the newest release whose KV budget comes from the start-up profile; 0.34 sizes an "
    "extensible KV cache after warm-up, not modelled); SGLang 0.5 (default); TensorRT-LLM 1.0-1.2 (default "
    "1.2). vLLM spans that account alike: " + ", ".join(r.name for r in VLLM_RELEASES) + ".")


@cache  # pure in its arguments: a table lookup
def release(engine: str, version: str | None = None) -> Release:
    """The modelled release span holding `version` ("0.19.1", "0.20"; None: the default) of `engine`."""
    text = version or DEFAULT_ENGINE_VERSION[engine]
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\S*)?", text.strip())
    table = _TABLES[engine]
    if m and int(m.group(1)) == table[0].major:
        minor = int(m.group(2))
        for r in table:
            if r.first <= minor <= r.last:
                return r
    spans = ", ".join(r.name for r in table)
    why = ("; 0.34 and later size an extensible KV cache after warm-up, which is not modelled"
           if engine == "vllm" and m and int(m.group(1)) == 0 and int(m.group(2)) > table[-1].last else "")
    raise ValueError(f"--engine-version: {text!r} is not a modelled {engine} release (modelled: {spans}{why})")
