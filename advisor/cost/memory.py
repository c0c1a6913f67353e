"""Memory per GPU following vLLM's accounting (`v1/worker/gpu_worker.py:
Worker.determine_available_memory`, `utils/mem_utils.py: memory_profiling`):

    kv_cache = capacity * gpu_memory_utilization - weights - activation peak - non-torch - CUDA graphs

then KV tokens = kv_cache / (KV bytes per token per GPU), and the number of max-model-len sequences
that fit. Weight bytes by group and sharding come from `cost/weights.py`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from advisor.arch.model import ModelArch, WeightGroup
from advisor.cost.plan import Plan
from advisor.cost.weights import weights_per_gpu
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile

GiB = 2**30
# Typical magnitudes (not read from code; experience): CUDA graphs 0.3-2 GiB;
# non-torch growth (allocator, attention workspaces, cuBLAS) a few hundred MiB. Midpoints taken.
CUDA_GRAPH_BYTES = 1.0 * GiB
NON_TORCH_BYTES = 0.5 * GiB
# Activation peak of `profile_run` (vLLM `gpu_model_runner.py: profile_run`): per token ~12 hidden-wide
# BF16 buffers (residual, norm out, qkv, attention out, MLP in/out) plus 3 intermediate-wide ones (gate/up
# out, act), and the dummy sampler's full-vocab fp32 logits with one temporary copy for each of
# max_num_seqs requests.
ACT_HIDDEN_BUFFERS = 12
ACT_INTER_BUFFERS = 3
SAMPLER_COPIES = 2


class MemoryFit(BaseModel):
    model_config = ConfigDict(frozen=True)

    fits: bool
    reason: str | None
    weights_bytes: float
    kv_cache_bytes: float
    activation_bytes: float
    overhead_bytes: float
    capacity_bytes: float
    budget_bytes: float
    kv_cache_tokens: int
    max_concurrency: int
    max_model_len: int
    kv_dtype: str
    kv_bytes_per_token: float  # per GPU, one token, all layers of the stage


def kv_elem_bytes(arch: ModelArch, settings: Settings) -> tuple[float, str]:
    """KV element size: `auto` -> the checkpoint's (ModelOpt FP8-KV checkpoints resolve to fp8,
    `engine/arg_utils.py:resolve_kv_cache_dtype_string`), else the flag."""
    dtype = arch.kv_dtype if settings.kv_cache_dtype == "auto" else settings.kv_cache_dtype
    return (1.0 if dtype == "fp8" else 2.0), dtype


def activation_bytes(arch: ModelArch, plan: Plan, settings: Settings, gpu_bytes: int) -> float:
    tokens = settings.batched_tokens(gpu_bytes)
    inter = 0.0
    if arch.moe is not None:
        inter = max(arch.moe.experts_per_token * arch.moe.expert_intermediate / plan.moe_tp,
                    arch.moe.dense_intermediate / plan.tp, arch.moe.shared_intermediate / plan.tp)
    else:
        inter = 4.0 * arch.hidden_size / plan.tp  # dense models: intermediate ~3.5-4x hidden
        dense = [w for w in arch.weights if w.name == "dense_mlp"]
        if dense and arch.num_layers:
            inter = dense[0].params / (3 * arch.hidden_size * max(dense[0].layers, 1)) / plan.tp
    per_token = (ACT_HIDDEN_BUFFERS * arch.hidden_size + ACT_INTER_BUFFERS * inter) * 2
    sampler = settings.num_seqs(gpu_bytes) * arch.vocab_size / plan.tp * 4 * SAMPLER_COPIES
    return tokens * per_token + sampler


def memory_fit(arch: ModelArch, plan: Plan, hw: HardwareProfile, settings: Settings,
               weights: tuple[WeightGroup, ...]) -> MemoryFit:
    capacity = float(hw.gpu.memory_bytes)
    budget = capacity * settings.gpu_memory_utilization
    act = activation_bytes(arch, plan, settings, hw.gpu.memory_bytes)
    w = weights_per_gpu(weights, plan)
    overhead = CUDA_GRAPH_BYTES + NON_TORCH_BYTES
    kv_room = budget - w - act - overhead
    b, dtype = kv_elem_bytes(arch, settings)
    per_token = arch.kv_bytes_per_token(plan.tp, b) / plan.pp
    per_seq = (arch.window_kv_bytes_per_seq(plan.tp, b) + arch.state_bytes_per_seq(plan.tp)) / plan.pp
    model_len = settings.model_len(arch.max_context)
    per_full_seq = model_len * per_token + per_seq
    if kv_room <= 0:
        return MemoryFit(fits=False, reason=(
            f"needs {(w + act + overhead) / GiB:.1f} GiB per GPU (weights {w / GiB:.1f}), over the "
            f"{budget / GiB:.1f} GiB budget ({settings.gpu_memory_utilization:g} of {capacity / GiB:.1f} GiB)"),
            weights_bytes=w, kv_cache_bytes=0.0, activation_bytes=act, overhead_bytes=overhead,
            capacity_bytes=capacity, budget_bytes=budget, kv_cache_tokens=0, max_concurrency=0,
            max_model_len=model_len, kv_dtype=dtype, kv_bytes_per_token=per_token)
    tokens = int(kv_room / per_token) if per_token > 0 else int(kv_room / per_seq * model_len)
    conc = int(kv_room / per_full_seq) if per_full_seq > 0 else settings.num_seqs(hw.gpu.memory_bytes)
    reason = None
    if conc < 1:
        reason = (f"KV room {kv_room / GiB:.1f} GiB per GPU holds {tokens} tokens, fewer than "
                  f"--max-model-len {model_len}")
    return MemoryFit(fits=conc >= 1, reason=reason, weights_bytes=w, kv_cache_bytes=kv_room,
                     activation_bytes=act, overhead_bytes=overhead, capacity_bytes=capacity, budget_bytes=budget,
                     kv_cache_tokens=tokens * plan.dp, max_concurrency=conc * plan.dp, max_model_len=model_len,
                     kv_dtype=dtype, kv_bytes_per_token=per_token)
