"""Memory per GPU as the engine accounts it, in the words of its start-up log.

The budget term by term is `cost/budget.py` (vLLM `v1/worker/gpu_worker.py:Worker.determine_available_memory`,
SGLang `kv_cache_configurator.py`); weight bytes by group and sharding come from `cost/weights.py`. The KV
pool is then cut into blocks as vLLM does (`v1/core/kv_cache_utils.py:get_kv_cache_config_from_groups`):

    num_blocks = available // (page bytes x layers per group),   page = block_size x KV bytes per token per layer

and "GPU KV cache size: N tokens" / "Maximum concurrency for L tokens per request: Zx" are computed from the
blocks with the release's formula (`kv_layout`).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from advisor.arch.model import ModelArch, WeightGroup, token_kv_bytes
from advisor.cost.budget import FITTED, Budget, Constants, sglang_budget, trtllm_budget, vllm_budget
from advisor.cost.engine_args import EngineArgs
from advisor.cost.plan import Plan
from advisor.cost.weights import weights_per_gpu
from advisor.hardware import HardwareProfile

GiB = 2**30
# vLLM `platforms/cuda.py:CudaPlatform.check_and_update_config` (v0.11.0) / `CacheConfig.DEFAULT_BLOCK_SIZE`
# (v0.19.1-v0.33.0): 16 tokens per block; MLA backends (FlashMLA, sparse MLA) force 64. SGLang pages: 1 token.
BLOCK_SIZE = 16
MLA_BLOCK_SIZE = 64


class MemoryFit(BaseModel):
    model_config = ConfigDict(frozen=True)

    fits: bool
    reason: str | None
    weights_bytes: float
    kv_cache_bytes: float  # KV room on one GPU (>= 0); the timing model reads it
    activation_bytes: float
    overhead_bytes: float  # non-torch growth + CUDA-graph estimate
    capacity_bytes: float
    budget_bytes: float
    kv_cache_tokens: int  # over all DP ranks
    max_concurrency: int  # max-model-len sequences over all DP ranks
    max_model_len: int
    kv_dtype: str
    kv_bytes_per_token: float  # per GPU, one token, all layers of the stage
    engine: str
    engine_version: str  # the modelled release span, e.g. "0.30-0.33"
    available_kv_bytes: float  # "Available KV cache memory" (negative when the engine refuses to start)
    gpu_kv_cache_tokens: int  # "GPU KV cache size: N tokens" of one engine (one DP rank)
    concurrency: float  # "Maximum concurrency for max_model_len tokens per request: Zx"
    block_size: int
    num_blocks: int
    budget: Budget


def kv_elem_bytes(args: EngineArgs) -> float:
    """Bytes per KV element of the resolved cache dtype (`cost/engine_args.py: kv_dtype_for`)."""
    return 1.0 if args.kv_cache_dtype == "fp8" else 2.0


class KvLayout(BaseModel):
    """vLLM's KV-cache groups on one GPU (`kv_cache_utils.py:_get_kv_cache_groups_uniform_page_size`): layers of
    one type share a group of `group_size` layers; every block of every group has `page` bytes per layer."""

    model_config = ConfigDict(frozen=True)

    block_size: int  # the smallest block size of the groups (tokens per block)
    page: float  # bytes per block per layer (uniform across groups)
    group_size: float  # layers per group on this GPU (one PP stage)
    blocks_per_request: float  # sum over groups of the blocks one max-model-len request needs
    groups: int


def kv_layout(arch: ModelArch, plan: Plan, b: float, model_len: int, batched_tokens: int) -> KvLayout:
    """Groups by layer type (full/MLA, sliding window, mamba/linear state); group_size = the fewest layers of a
    type (the most if max < 1.5 min); pages unified by raising the block size of the types with fewer bytes
    per token (`kv_cache_utils.py:unify_kv_cache_spec_page_size`; Mamba states set the attention block size,
    `config/models.py:HybridAttentionMambaModelConfig`). Blocks per request: full cdiv(L, bs), sliding
    cdiv(min(window - 1 + max_num_batched_tokens, L), bs) + 1 (`kv_cache_interface.py:SlidingWindowSpec.
    max_memory_usage_bytes`), state 1."""
    kinds: dict[str, list[float]] = {}  # type -> [layers, bytes per token per layer, window]
    state = 0.0
    for g in arch.attn_groups:
        if g.kind in ("linear", "mamba"):
            kinds["state"] = [kinds.get("state", [0.0])[0] + g.layers, 0.0, 0.0]
            state = max(state, g.state_elems * 2.0 / plan.tp)
        else:
            key = "sliding" if g.window is not None else "full"
            prev = kinds.get(key, [0.0, 0.0, 0.0])
            kinds[key] = [prev[0] + g.layers, max(prev[1], token_kv_bytes(g, plan.tp, b)), float(g.window or 0)]
    per_token = max((v[1] for v in kinds.values()), default=0.0)
    block = MLA_BLOCK_SIZE if arch.attention == "mla" else BLOCK_SIZE
    if state and per_token:
        block = BLOCK_SIZE * math.ceil(state / (BLOCK_SIZE * per_token))
    page = max(block * per_token, state)
    counts = [v[0] for v in kinds.values()]
    size = min(counts) if max(counts) >= 1.5 * min(counts) else max(counts)
    need, groups, smallest = 0.0, 0, block
    for kind, (n, tb, window) in kinds.items():
        k = math.ceil(n / size)
        groups += k
        bs = block * round(per_token / tb) if tb else block  # this type's block size once pages are unified
        smallest = min(smallest, bs)
        if kind == "full":
            need += k * math.ceil(model_len / bs)
        elif kind == "sliding":
            need += k * (math.ceil(min(window - 1 + batched_tokens, model_len) / bs) + 1)
        else:
            need += k
    return KvLayout(block_size=smallest, page=page, group_size=size / plan.pp, blocks_per_request=need,
                    groups=groups)


def log_counts(layout: KvLayout, available: float, model_len: int, printed: str) -> tuple[int, int, float]:
    """(num_blocks, printed tokens, concurrency): num_blocks = available // (page x group_size); tokens =
    num_blocks // groups x min block size up to v0.21 (`kv_cache_utils.py:get_kv_cache_config_from_groups`),
    int(concurrency x L) from v0.22 (`get_kv_cache_capacity`); concurrency = num_blocks / blocks per request
    (`get_max_concurrency_for_kv_cache_config`)."""
    if available <= 0 or layout.page <= 0:
        return 0, 0, 0.0
    blocks = int(available // (layout.page * layout.group_size))
    conc = blocks / layout.blocks_per_request
    tokens = blocks // layout.groups * layout.block_size if printed == "blocks" else int(conc * model_len)
    return blocks, tokens, conc


def sglang_counts(arch: ModelArch, plan: Plan, b: float, available: float, model_len: int) -> tuple[int, int, float]:
    """SGLang: max_total_num_tokens = available // cell_size, cell = KV bytes per token over every attention
    layer (`model_runner.py:profile_max_num_token`; sliding-window pools get the same token count,
    `SWAKVPool`); one request needs L tokens."""
    cell = sum(g.layers * token_kv_bytes(g, plan.tp, b) for g in arch.attn_groups) / plan.pp
    if available <= 0 or cell <= 0:
        return 0, 0, 0.0
    tokens = int(available // cell)
    return tokens, tokens, tokens / model_len


def _tipping(budget: Budget) -> str:
    """Which term takes the sum past the budget, counted in the engine's order."""
    terms = [("weights", budget.weights), ("non-torch memory (CUDA/NCCL buffers)", budget.non_torch),
             ("activation peak of the start-up profile" + (" (sampler warm-up)" if budget.sampler > budget.forward
                                                           else " (forward pass)"), budget.activation),
             ("CUDA-graph estimate", budget.cudagraph)]
    total = 0.0
    for name, value in terms:
        total += value
        if total > budget.requested:
            return f"{name}, {value / GiB:.1f} GiB"
    return "sum of them"


def no_fit_reason(budget: Budget, engine: str, model_len: int, tokens: int, conc: float) -> str | None:
    """Why the engine would refuse to start, naming the term that tips it; None when it starts."""
    b, cap, u = budget, budget.capacity / GiB, budget.utilization
    if engine == "vllm" and budget.capacity - budget.pre_snapshot < budget.requested:
        return (f"free memory at start-up {(budget.capacity - budget.pre_snapshot) / GiB:.1f} GiB (after the CUDA "
                f"context and NCCL) is less than --gpu-memory-utilization {u:g} x {cap:.1f} GiB")
    if b.available_kv <= 0:
        used = b.weights + b.non_torch + b.activation + b.cudagraph
        of = (f"the {b.requested / GiB:.1f} GiB the GPU has after the CUDA context and NCCL" if engine == "trtllm"
              else f"the {b.requested / GiB:.1f} GiB budget ({u:g} of {cap:.1f} GiB)")
        if b.weights > b.requested:
            return f"weights {b.weights / GiB:.1f} GiB per GPU alone exceed {of}"
        return (f"needs {used / GiB:.1f} GiB per GPU before any KV cache, over {of}; it is tipped by the "
                f"{_tipping(b)} (weights "
                f"{b.weights / GiB:.1f}, non-torch {b.non_torch / GiB:.1f}, activation {b.activation / GiB:.1f}, "
                f"CUDA graphs {b.cudagraph / GiB:.1f} GiB)")
    if conc < 1:
        return (f"KV room {b.available_kv / GiB:.1f} GiB per GPU holds {tokens} tokens, fewer than one request of "
                f"--max-model-len {model_len}")
    return None


def spec_acceptance_known(model: str, given: float | None) -> bool:
    """Whether speculation runs for `model`: the user's acceptance, or a published one (`cost/speculative.py`)."""
    from advisor.cost.speculative import acceptance_for

    return acceptance_for(model, given)[0] is not None


def memory_fit(arch: ModelArch, plan: Plan, hw: HardwareProfile, args: EngineArgs,
               weights: tuple[WeightGroup, ...], consts: Constants = FITTED) -> MemoryFit:
    """One GPU's memory at `plan`, as the resolved engine arguments' release accounts it and prints it at start-up
    (`consts`: the budget's fitted constants; other values only to validate them)."""
    w = weights_per_gpu(weights, plan)
    # the drafter's MTP layers, sharded like a layer (TP), when speculation is on for this model
    if args.speculative and arch.mtp_layers and spec_acceptance_known(arch.model, args.spec_acceptance):
        w += arch.mtp_bytes / plan.tp
    model_len = args.max_model_len
    if args.engine == "sglang":
        budget = sglang_budget(arch, plan, hw, args, w)
    elif args.engine == "trtllm":
        budget = trtllm_budget(arch, plan, hw, args, w, consts)
    else:
        budget = vllm_budget(arch, plan, hw, args, w, consts)
    b = kv_elem_bytes(args)
    layout = kv_layout(arch, plan, b, model_len, args.max_num_batched_tokens)
    if args.engine == "sglang":
        blocks, tokens, conc = sglang_counts(arch, plan, b, budget.available_kv, model_len)
        layout = layout.model_copy(update={"block_size": 1})
    else:
        blocks, tokens, conc = log_counts(layout, budget.available_kv, model_len, args.engine_release().printed)
    reason = no_fit_reason(budget, args.engine, model_len, tokens, conc)
    runs = reason is None
    return MemoryFit(
        fits=runs, reason=reason, weights_bytes=w, kv_cache_bytes=max(budget.available_kv, 0.0),
        activation_bytes=budget.activation, overhead_bytes=budget.non_torch + budget.cudagraph,
        capacity_bytes=budget.capacity, budget_bytes=budget.requested,
        kv_cache_tokens=tokens * plan.dp, max_concurrency=int(conc) * plan.dp,
        max_model_len=model_len, kv_dtype=args.kv_cache_dtype,
        kv_bytes_per_token=arch.kv_bytes_per_token(plan.tp, b) / plan.pp, engine=args.engine,
        engine_version=args.release, available_kv_bytes=budget.available_kv, gpu_kv_cache_tokens=tokens,
        concurrency=conc, block_size=layout.block_size, num_blocks=blocks, budget=budget)


def startup_lines(m: MemoryFit) -> list[str]:
    """The start-up log lines the engine prints for this GPU, in its own words: vLLM `gpu_model_runner.py:
    load_model`, `gpu_worker.py:determine_available_memory`, `kv_cache_utils.py:_report_kv_cache_config`;
    SGLang `model_runner.py:load_model` and `mem_cache/memory_pool.py` (GB there = 2**30 bytes)."""
    if m.engine == "trtllm":  # `_torch/pyexecutor/_util.py: KvCacheCreator`, C++ `kvCacheManager.cpp`
        return [f"Estimated max memory in KV cache : {m.available_kv_bytes / GiB:.2f} GiB",
                f"[MemUsageChange] Allocated {m.available_kv_bytes / GiB:.2f} GiB for max tokens in paged KV cache "
                f"({m.gpu_kv_cache_tokens})."]
    if m.engine == "sglang":
        return [f"Load weight end. mem usage={m.weights_bytes / GiB:.2f} GB",
                f"KV Cache is allocated. #tokens: {m.gpu_kv_cache_tokens}",
                f"max_total_num_tokens={m.gpu_kv_cache_tokens}, context_len={m.max_model_len}"]
    return [f"Model loading took {m.weights_bytes / GiB:.2f} GiB memory",
            f"Available KV cache memory: {m.available_kv_bytes / GiB:.2f} GiB",
            f"GPU KV cache size: {m.gpu_kv_cache_tokens:,} tokens",
            f"Maximum concurrency for {m.max_model_len:,} tokens per request: {m.concurrency:.2f}x"]
