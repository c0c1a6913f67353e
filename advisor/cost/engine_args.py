"""Every engine setting a prediction depends on, resolved once for (engine, release, hardware, model, plan, the
user's flags), in the manner of vLLM's `EngineArgs.create_engine_config`: memory (`cost/memory.py`), timing
(`cost/features.py`, `cost/timing.py`), `predict --json` and the printed command (`decide/command.py`) read only
the resolved `EngineArgs`, never a default of their own.

Defaults and their sources:
- vLLM `max_num_seqs` / `max_num_batched_tokens` (OpenAI server): `vllm/engine/arg_utils.py:
  EngineArgs._set_default_args` (`get_batch_defaults`): devices with >= 70 GiB whose name does not contain
  "a100" get 8192 / 1024, others 2048 / 256; from v0.30.0 devices with >= 160 GiB get 16384 / 1024
  (`Release.big_tier_gib`). The device memory is `torch.cuda` total memory (`current_platform.
  get_device_total_memory`).
- SGLang `chunked_prefill_size` by GPU memory (`srt/arg_groups/memory_hook.py: handle_gpu_memory_settings`,
  `cost/budget.py: sglang_defaults`); `max_running_requests` 1024 per DP rank (the cap the prediction assumes);
  `--mem-fraction-static` by its heuristic (`cost/engine_defaults.py: sglang_fraction`).
- TensorRT-LLM `max_num_tokens` 8192 and `max_batch_size` 2048 (`llmapi/llm_args.py: TorchLlmArgs`,
  `commands/serve.py`), `free_gpu_memory_fraction` 0.9 (`KvCacheConfig`), decode CUDA graphs 1-31, 32, 64, 128
  (`CudaGraphConfig._generate_cuda_graph_batch_sizes`).
- SGLang `enable_two_batch_overlap` False (`srt/server_args.py`; `cost/tbo.py`), on only by the user's flag.
- The MoE all-to-all: SGLang `--moe-a2a-backend none`, vLLM `--all2all-backend allgather_reducescatter`
  (`hardware/a2a_backends.py`); DeepEP across RDMA nodes where the printed command selects it; DeepEP inside a
  node or rack only by the user's `moe_a2a_backend`.
- vLLM CUDA-graph capture sizes (`config/vllm.py: VllmConfig._set_cudagraph_sizes`, `cost/engine_defaults.py:
  capture_sizes`); the steps a scheduler prepares ahead (`engines.scheduled_ahead`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from advisor.arch.model import ModelArch
from advisor.cost.engine_defaults import TRTLLM_GRAPH_SIZES, capture_sizes, cuda_total, sglang_defaults, sglang_fraction
from advisor.cost.plan import Plan
from advisor.cost.workload import Settings
from advisor.engines import (
    DEFAULT_ENGINE_VERSION,
    DEFAULT_MAX_MODEL_LEN,
    TRTLLM_ADP_BATCHING_WAIT_ITERS,
    Engine,
    Release,
    WeightDtype,
    release,
    scheduled_ahead,
)
from advisor.hardware import HardwareProfile

GiB = 2**30
# vLLM `engine/arg_utils.py: get_batch_defaults`: the larger defaults from 70 GiB of device memory, except A100s
VLLM_BIG_GPU_BYTES = 70 * GiB
SGLANG_MAX_RUNNING_REQUESTS = 1024
TRTLLM_MAX_NUM_TOKENS, TRTLLM_MAX_BATCH_SIZE = 8192, 2048


class EngineArgs(BaseModel):
    """The engine's configuration for one model at one plan on one GPU, every default filled (per DP rank where
    the engine counts per rank: max_num_seqs, max_num_batched_tokens). `sources` names, per field that was not
    the user's flag, where its value comes from."""

    model_config = ConfigDict(frozen=True)

    engine: Engine
    engine_version: str  # the version asked for, else the newest modelled (engines.DEFAULT_ENGINE_VERSION)
    release: str  # the modelled release span it falls in
    max_model_len: int
    gpu_memory_utilization: float  # vLLM's share; SGLang --mem-fraction-static; TensorRT-LLM's KV fraction
    kv_cache_dtype: str  # "bf16" | "fp8": the KV cache as stored
    weight_dtype: WeightDtype | None  # the served linear-layer format when --weight-dtype re-quantizes
    max_num_seqs: int
    max_num_batched_tokens: int  # vLLM's token budget; SGLang's chunked_prefill_size; TensorRT-LLM's max_num_tokens
    cuda_graph_sizes: tuple[int, ...]  # batch sizes captured as CUDA graphs (empty: eager)
    profile_cuda_graphs: bool  # the CUDA-graph memory estimate is subtracted from the KV budget
    enforce_eager: bool
    scheduled_ahead: int  # steps the scheduler prepares while the GPU runs the previous one
    adp_batching_wait_iters: int  # TensorRT-LLM attention-DP balancing (`AttentionDpConfig.batching_wait_iters`)
    speculative: bool
    speculative_tokens: int | None
    spec_acceptance: float | None
    spec_accept_len: float | None
    two_batch_overlap: bool  # SGLang --enable-two-batch-overlap (`cost/tbo.py`); off by default
    moe_a2a_backend: str  # "default" | "deepep" (`Settings.moe_a2a_backend`); the engine's own by default
    sort_sampler: bool  # every step sorts the vocabulary per sampled row (vLLM 0.11-0.16 with a top-p < 1)
    sources: dict[str, str]

    def engine_release(self) -> Release:
        return release(self.engine, self.engine_version)

    @property
    def cuda_graph_max(self) -> int:
        """The largest batch a CUDA graph covers (0: eager)."""
        return max(self.cuda_graph_sizes, default=0)


def kv_dtype_for(arch: ModelArch, s: Settings, sm: str) -> str:
    """The KV cache dtype: `auto` -> the checkpoint's (ModelOpt FP8-KV checkpoints resolve to fp8,
    vLLM `engine/arg_utils.py:resolve_kv_cache_dtype_string`), else the flag. SGLang stores a DSA model's cache
    (DeepSeek-V3.2, GLM-5) in FP8 on compute capability 10 and above under `auto` (v0.5.5-v0.5.10
    `server_args.py: _set_default_nsa_kv_cache_dtype`: "fp8_e4m3" if major >= 10 else "bfloat16")."""
    if s.kv_cache_dtype != "auto":
        return s.kv_cache_dtype
    if s.engine == "sglang" and sm_major(sm) >= 10 and any(g.index_topk for g in arch.attn_groups):
        return "fp8"
    return arch.kv_dtype


def sm_major(sm: str) -> int:
    """Compute capability major of an `smXY(Z)` name ("sm90" -> 9, "sm103" -> 10, "sm120" -> 12); 0 if unknown."""
    digits = sm.removeprefix("sm")
    return int(digits[:-1]) if digits.isdigit() and len(digits) >= 2 else 0


def batch_limits(s: Settings, hw: HardwareProfile) -> tuple[int, int, str]:
    """(max_num_batched_tokens, max_num_seqs, source) per DP rank: the flags, else the release's defaults for
    this GPU (see the module docstring). vLLM caps max_num_seqs by max_num_batched_tokens (v0.11+)."""
    if s.engine == "sglang":
        tokens, seqs = sglang_defaults(Plan(), hw.gpu.memory_bytes / 2**20)[0], SGLANG_MAX_RUNNING_REQUESTS
        src = "sglang memory_hook.py:handle_gpu_memory_settings chunked_prefill_size by GPU memory"
    elif s.engine == "trtllm":
        tokens, seqs = TRTLLM_MAX_NUM_TOKENS, TRTLLM_MAX_BATCH_SIZE
        src = "tensorrt_llm llmapi/llm_args.py max_num_tokens 8192, max_batch_size 2048"
    else:
        cap, name, big = cuda_total(hw), hw.gpu.name.lower(), release(s.engine, s.engine_version).big_tier_gib
        if big is not None and cap >= big * GiB:
            tokens, seqs = 16384, 1024
        elif cap >= VLLM_BIG_GPU_BYTES and "a100" not in name:
            tokens, seqs = 8192, 1024
        else:
            tokens, seqs = 2048, 256
        src = "vllm engine/arg_utils.py:EngineArgs._set_default_args (get_batch_defaults) for this GPU"
    tokens = s.max_num_batched_tokens or tokens
    seqs = s.max_num_seqs or (min(seqs, tokens) if s.engine == "vllm" else seqs)
    return tokens, seqs, src


def resolve(s: Settings, arch: ModelArch, plan: Plan, hw: HardwareProfile) -> EngineArgs:
    """The engine's full configuration for `arch` at `plan` on `hw` under the user's flags `s`."""
    rel = s.release()
    version = s.engine_version or DEFAULT_ENGINE_VERSION[s.engine]
    tokens, seqs, batch_src = batch_limits(s, hw)
    sources = {"max_num_seqs": batch_src, "max_num_batched_tokens": batch_src}
    if s.engine == "sglang":
        util = s.gpu_memory_utilization or sglang_fraction(arch, plan, hw)
        sources["gpu_memory_utilization"] = "sglang memory_hook.py:handle_gpu_memory_settings heuristic"
        max_bs = sglang_defaults(plan, hw.gpu.memory_bytes / 2**20)[1]
        # `server_args.py: ServerArgs._generate_cuda_graph_batch_sizes` (no speculation, padding on)
        graphs = tuple(b for b in (1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16),
                                   *range(512, max_bs + 1, 32)) if b <= max_bs)
        sources["cuda_graph_sizes"] = ("sglang server_args.py:_generate_cuda_graph_batch_sizes up to cuda_graph_max_bs "
                                       "by GPU memory and TP (memory_hook.py)")
    elif s.engine == "trtllm":
        util = s.gpu_memory_utilization or rel.gpu_memory_utilization
        graphs = tuple(TRTLLM_GRAPH_SIZES)
        sources["cuda_graph_sizes"] = "tensorrt_llm CudaGraphConfig._generate_cuda_graph_batch_sizes"
        sources["gpu_memory_utilization"] = "tensorrt_llm KvCacheConfig.free_gpu_memory_fraction"
    else:
        util = s.gpu_memory_utilization or rel.gpu_memory_utilization
        graphs = tuple(capture_sizes(seqs, tokens, rel, hw.gpu.sm))
        sources["cuda_graph_sizes"] = "vllm config/vllm.py:VllmConfig._set_cudagraph_sizes"
        sources["gpu_memory_utilization"] = "vllm config/cache.py:CacheConfig.gpu_memory_utilization"
    if s.enforce_eager:
        graphs = ()
    profiled = False if s.enforce_eager else (rel.graph_estimate if s.profile_cuda_graphs is None
                                              else s.profile_cuda_graphs)
    model_len = s.max_model_len or min(arch.max_context, DEFAULT_MAX_MODEL_LEN)
    sources["max_model_len"] = "--max-model-len" if s.max_model_len else \
        f"min(model maximum, {DEFAULT_MAX_MODEL_LEN}) (advisor's serving default)"
    for name in ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization"):
        if getattr(s, name) is not None:
            sources[name] = "--" + name.replace("_", "-")
    return EngineArgs(
        engine=s.engine, engine_version=version, release=rel.name, max_model_len=model_len,
        gpu_memory_utilization=util, kv_cache_dtype=kv_dtype_for(arch, s, hw.gpu.sm or ""),
        weight_dtype=s.weight_dtype, max_num_seqs=seqs, max_num_batched_tokens=tokens, cuda_graph_sizes=graphs,
        profile_cuda_graphs=profiled, enforce_eager=s.enforce_eager,
        scheduled_ahead=scheduled_ahead(s.engine, version), adp_batching_wait_iters=TRTLLM_ADP_BATCHING_WAIT_ITERS,
        speculative=s.speculative, speculative_tokens=s.speculative_tokens, spec_acceptance=s.spec_acceptance,
        spec_accept_len=s.spec_accept_len, two_batch_overlap=s.two_batch_overlap,
        moe_a2a_backend=s.moe_a2a_backend, sort_sampler=rel.sampler == "sort" and (s.top_p or 1.0) < 1.0,
        sources=sources)
