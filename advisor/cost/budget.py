"""The engine's memory budget on one GPU, term by term, as the engine release accounts it.

vLLM v0.11-v0.33 (`v1/worker/gpu_worker.py:Worker.determine_available_memory`, `utils/mem_utils.py:
memory_profiling`):

    available KV = total x gpu_memory_utilization - weights - activation peak - non-torch growth - graph estimate

with total = what CUDA reports (`torch.cuda.mem_get_info`), the activation peak the torch peak of `profile_run`
(a forward of max_num_batched_tokens, then the sampler warm-up over max_num_seqs rows), the non-torch growth
since the snapshot that `init_device` takes after NCCL init (so the CUDA context is outside the budget) and,
from v0.20, the CUDA-graph estimate (`gpu_model_runner.py:profile_cudagraph_memory`). SGLang v0.5: `sglang_budget`.

Not subtracted, as in the engine: attention-backend workspaces (FlashInfer 256-394 MiB, MLA 394 MiB) are made
with the KV cache (`initialize_kv_cache`, after the budget; the profile skips attention) and live in the
(1 - utilisation) slack, like the CUDA context and, up to v0.19, the captured graphs. Approximation: fused-MoE
caches are counted as transient; where a release's kernel takes them from the workspace manager
(`v1/worker/workspace.py`) they stay allocated through the sampler warm-up (up to ~0.8 GiB, GLM-5 at TP8).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from advisor.arch.model import ModelArch
from advisor.cost.engine_args import EngineArgs
from advisor.cost.engine_defaults import cuda_total
from advisor.cost.plan import Plan
from advisor.hardware import HardwareProfile

GiB = 2**30
MiB = 2**20


class Constants(BaseModel):
    """The budget's constants that no engine file states, fitted once (`research/logcheck.py:
    fit_constants`) on llm-d's measured per-term columns (vLLM v0.11.0, H100; tests/data/logs L13-L18,
    "Activation" and "Non-torch"); the README's memory-log table gives their leave-one-row-out errors."""

    model_config = ConfigDict(frozen=True)

    sort_temp_bytes: float  # per row x vocab element: torch.sort's temporaries beyond its fp32 values + int64 indices
    non_torch_base_bytes: float  # non-torch growth during the profile at TP1 (cuBLAS workspaces, kernels)
    nccl_peer_bytes: float  # NCCL buffers per peer GPU of each communicator the forward uses


FITTED = Constants(sort_temp_bytes=20.34, non_torch_base_bytes=0.1325 * GiB, nccl_peer_bytes=0.4125 * GiB)

# Read from single log lines (tests/data/logs/README.md): memory in use before vLLM's snapshot.
CUDA_CONTEXT_BYTES = 0.53 * GiB  # H100, TP1: "Free memory on device (78.66/79.19 GiB) on startup" (log K02)
NCCL_INIT_PEER_BYTES = 0.143 * GiB  # RTX PRO 6000, TP4: (95.01 - 94.05 - 0.53) GiB / 3 peers (log K01)

# vLLM v0.11.0 envs.py VLLM_FUSED_MOE_CHUNK_SIZE default 32768 (fused_moe.py:fused_experts_impl chunks M by it)
MOE_CHUNK_TOKENS = 32768
# v0.20.0 model_executor/layers/sparse_attn_indexer.py: profile-run dummy logits VLLM_SPARSE_INDEXER_MAX_LOGITS_MB
# (512) and the K-gather workspace of v1/attention/backends/mla/indexer.py:get_max_prefill_buffer_size
# (40 x max_model_len entries of 128 fp8 + 4 scale bytes), plus RADIX_TOPK_WORKSPACE_SIZE (1 MiB).
DSA_LOGITS_BYTES = 512 * MiB
DSA_GATHER_ENTRIES_PER_TOKEN = 40
DSA_ENTRY_BYTES = 132
# v0.20.0 gpu_model_runner.py:profile_cudagraph_memory: per-graph estimate max(second capture, 1 MiB)
GRAPH_FLOOR_BYTES = 1 * MiB


class Budget(BaseModel):
    """One GPU's memory as the engine accounts it at start-up (bytes)."""

    model_config = ConfigDict(frozen=True)

    capacity: float  # what CUDA reports as the device total
    utilization: float
    requested: float  # capacity x utilization (vLLM); SGLang: free before load x mem_fraction_static;
    # TensorRT-LLM: capacity - CUDA context and NCCL init (its fraction applies to what the profile leaves)
    weights: float
    sampler: float  # sampler warm-up peak (logits for max_num_seqs rows over the vocabulary)
    forward: float  # forward of max_num_batched_tokens (MoE / MLP / attention intermediates)
    persistent: float  # workspaces still held when the peak is reached (DSA indexer)
    activation: float  # the profile's torch peak: max(forward, sampler + hidden states) + persistent
    non_torch: float  # non-torch growth after the snapshot (cuBLAS, NCCL buffers)
    cudagraph: float  # CUDA-graph estimate subtracted from the budget (0 when not profiled)
    pre_snapshot: float  # CUDA context and NCCL init, outside the budget
    available_kv: float  # what the engine prints as "Available KV cache memory"


def sampler_bytes(rows: int, vocab: int, sampler: str, sort_temp_bytes: float = FITTED.sort_temp_bytes) -> float:
    """Sampler warm-up peak, rows x vocab x bytes per element (`gpu_model_runner.py:_dummy_sampler_run`, top-k
    = vocab-1, top-p 0.9): bf16 logits (2) + fp32 copy (4, `v1/sample/sampler.py:Sampler.forward`) + "sort":
    sorted fp32 values (4) and int64 indices (8) plus the sort's temporaries (fitted, `apply_top_k_top_p`);
    "triton": in-place top-k/top-p, then softmax (4), exponential noise (4) and probs.div (4)
    (`topk_topp_sampler.py:random_sample`); "v2": top-k/top-p and gumbel sampling in place
    (`v1/worker/gpu/sample/sampler.py`) but the penalties keep int32 output_bin_counts [max_num_seqs, vocab] (4,
    `sample/penalties.py:PenaltiesState`)."""
    per = {"sort": 2 + 4 + 4 + 8 + sort_temp_bytes, "triton": 2 + 4 + 4 + 4 + 4, "v2": 2 + 4 + 4}[sampler]
    return float(rows) * vocab * per


def layer_width(arch: ModelArch, plan: Plan) -> float:
    """Widest intermediate of one decoder layer per token (elements): attention q/k/v/out projections, the
    dense MLP's gate_up + act (3 I/tp) or the MoE's fused-expert caches (`fused_moe.py:fused_experts_impl`:
    cache13 topk x max(N, K) and cache2 topk x N/2 with N = 2 I/moe_tp, K = hidden, plus fp32 router logits)."""
    t = plan.tp
    attn = 0.0
    for g in arch.attn_groups:
        if g.kind == "mla":
            attn = max(attn, g.num_heads / t * g.head_dim * 2 + g.latent_dim)
        elif g.kind in ("full", "sliding"):
            attn = max(attn, g.num_heads / t * g.head_dim * 2 + 2 * max(1.0, g.kv_heads / t) * g.head_dim)
    mlp = 3.0 * arch.mlp_intermediate / t if arch.mlp_intermediate else 0.0
    moe = arch.moe
    if moe is not None:
        n = 2.0 * moe.expert_intermediate / plan.moe_tp
        k = float(arch.hidden_size)
        routed = moe.experts_per_token * (max(n, k) + n / 2) + 2 * moe.num_experts
        shared = 3.0 * moe.shared_intermediate * moe.shared_experts / t
        mlp = max(mlp, routed, shared)
    return max(attn, mlp)


def forward_bytes(arch: ModelArch, plan: Plan, tokens: int) -> float:
    """Forward peak of `tokens` tokens (bf16): hidden states and residual (2 x hidden) plus the widest layer
    intermediate, MoE caches chunked at VLLM_FUSED_MOE_CHUNK_SIZE; DSA models add the indexer's dummy logits."""
    moe_tokens = min(tokens, MOE_CHUNK_TOKENS)
    width = layer_width(arch, plan)
    body = tokens * 2.0 * arch.hidden_size + (moe_tokens if arch.moe is not None else tokens) * width
    dsa = DSA_LOGITS_BYTES if any(g.index_bytes_per_token for g in arch.attn_groups) else 0.0
    return body * 2.0 + dsa


def persistent_bytes(arch: ModelArch, max_model_len: int) -> float:
    """Workspaces the profile allocates and keeps (`sparse_attn_indexer.py`: the DSA K-gather workspace)."""
    if not any(g.index_bytes_per_token for g in arch.attn_groups):
        return 0.0
    return DSA_GATHER_ENTRIES_PER_TOKEN * max_model_len * DSA_ENTRY_BYTES + 1 * MiB


def peers(arch: ModelArch, plan: Plan) -> int:
    """Peer GPUs one rank talks to through NCCL in the forward: its TP group, the EP group when experts span
    DP ranks (`distributed/parallel_state.py`), and the neighbouring pipeline stages."""
    n = plan.tp - 1
    if arch.moe is not None and plan.dp > 1:
        n += plan.tp * plan.dp - 1
    return n + min(plan.pp - 1, 2)


def cudagraph_bytes(arch: ModelArch, plan: Plan, sizes: list[int], max_num_seqs: int) -> float:
    """CUDA-graph estimate (`profile_cudagraph_memory`, FULL_AND_PIECEWISE): the first capture (the forward of
    the largest size, into an empty pool) + (graphs - 1) x its 1 MiB per-graph floor, per mode; PIECEWISE over
    every size, FULL over decode sizes <= max_num_seqs. The measured per-graph sample is allocator-dependent:
    this is the estimate's lower bound."""
    if not sizes:
        return 0.0
    full = [s for s in sizes if s <= max_num_seqs]
    return forward_bytes(arch, plan, max(sizes)) + (len(sizes) - 1 + max(len(full) - 1, 0)) * GRAPH_FLOOR_BYTES


def vllm_budget(arch: ModelArch, plan: Plan, hw: HardwareProfile, args: EngineArgs, weights: float,
                consts: Constants = FITTED) -> Budget:
    """vLLM's KV budget on one GPU for the resolved engine arguments' release (see the module docstring)."""
    rel = args.engine_release()
    cap = cuda_total(hw)
    util = args.gpu_memory_utilization
    tokens, seqs = args.max_num_batched_tokens, args.max_num_seqs
    samp = sampler_bytes(min(seqs, tokens), arch.vocab_size, rel.sampler, consts.sort_temp_bytes)
    fwd = forward_bytes(arch, plan, tokens)
    keep = persistent_bytes(arch, args.max_model_len)
    act = max(fwd, samp + tokens * arch.hidden_size * 2.0) + keep
    nt = consts.non_torch_base_bytes + consts.nccl_peer_bytes * peers(arch, plan)
    graphs = cudagraph_bytes(arch, plan, list(args.cuda_graph_sizes), seqs) if args.profile_cuda_graphs else 0.0
    requested = cap * util
    return Budget(capacity=cap, utilization=util, requested=requested, weights=weights, sampler=samp,
                  forward=fwd, persistent=keep, activation=act, non_torch=nt, cudagraph=graphs,
                  pre_snapshot=CUDA_CONTEXT_BYTES + NCCL_INIT_PEER_BYTES * peers(arch, plan),
                  available_kv=requested - weights - act - nt - graphs)


def trtllm_budget(arch: ModelArch, plan: Plan, hw: HardwareProfile, args: EngineArgs, weights: float,
                  consts: Constants = FITTED) -> Budget:
    """TensorRT-LLM's KV pool on one GPU (PyTorch backend): after a profile run of max_num_tokens prompt tokens
    (CUDA graphs captured before it), KV = free_gpu_memory_fraction x (device total - peak torch memory
    (weights + the forward's activations) - memory outside torch (CUDA context, NCCL, graphs))
    (`_torch/pyexecutor/_util.py: KvCacheCreator.configure_kv_cache_capacity, _cal_max_memory`). The
    activation and non-torch terms are vLLM's estimates (`forward_bytes`, `Constants`) for the same forward."""
    cap = cuda_total(hw)
    frac = args.gpu_memory_utilization
    fwd = forward_bytes(arch, plan, args.max_num_batched_tokens)
    pre = CUDA_CONTEXT_BYTES + NCCL_INIT_PEER_BYTES * peers(arch, plan)
    nt = consts.non_torch_base_bytes + consts.nccl_peer_bytes * peers(arch, plan)
    sizes = args.cuda_graph_sizes  # captured before the profile run: outside torch's peak
    graphs = forward_bytes(arch, plan, max(sizes)) + (len(sizes) - 1) * GRAPH_FLOOR_BYTES if sizes else 0.0
    available = frac * (cap - weights - fwd - pre - nt - graphs)
    return Budget(capacity=cap, utilization=frac, requested=cap - pre,
                  weights=weights, sampler=0.0, forward=fwd, persistent=0.0, activation=fwd, non_torch=nt,
                  cudagraph=graphs, pre_snapshot=pre, available_kv=available)


def sglang_budget(arch: ModelArch, plan: Plan, hw: HardwareProfile, args: EngineArgs, weights: float) -> Budget:
    """SGLang's KV pool on one GPU: free memory after loading - free memory before loading x (1 - fraction)
    = before x fraction - weights (`mem_cache/kv_cache_configurator.py:_profile_available_bytes`), with the
    memory free before loading = CUDA total - context - NCCL init. No profile run: activations, graphs and
    NCCL buffers live in the (1 - fraction) slack."""
    cap = cuda_total(hw)
    frac = args.gpu_memory_utilization
    n = plan.tp * plan.dp - 1 + min(plan.pp - 1, 2)
    before = CUDA_CONTEXT_BYTES + NCCL_INIT_PEER_BYTES * n
    requested = (cap - before) * frac
    return Budget(capacity=cap, utilization=frac, requested=requested, weights=weights, sampler=0.0,
                  forward=0.0, persistent=0.0, activation=0.0, non_torch=0.0, cudagraph=0.0,
                  pre_snapshot=before, available_kv=requested - weights)
