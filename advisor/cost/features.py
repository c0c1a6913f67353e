"""Per-(model, plan) quantities the step model needs, stacked into numpy arrays [P].

Everything is per GPU of one TP group, summed over PP stages (a decode token passes every stage in turn):
dense (non-expert) GEMM bytes, FLOPs and call count; the MoE layer's expert shapes on one GPU; the attention
geometry per GPU of full and windowed layers (MLA: one latent "head"); the kernel parameters of the formats
that run them (`cost/kernels.py`); the collectives of a forward (`cost/collectives.py`); KV room.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from advisor.arch.formats import bytes_per_param, compute_dtype
from advisor.arch.model import ModelArch, WeightGroup
from advisor.cost import kernels, marlin
from advisor.cost.collectives import SLOTS, Collective, slot_rows, step_collectives
from advisor.cost.engine_args import EngineArgs
from advisor.cost.memory import MemoryFit, kv_elem_bytes
from advisor.cost.plan import Plan
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster

# GEMM calls per decoder layer the dense part issues (fused qkv + o; gate_up + down; MLA q_a/kv_a, q_b, kv_b,
# o; shared expert gate_up + down; router): vLLM's fused linear layers (`QKVParallelLinear`,
# `MergedColumnParallelLinear`) make these one call each.
ATTN_GEMMS = {"full": 2, "sliding": 2, "mla": 4, "linear": 2, "mamba": 2}
MLP_GEMMS = 2


@dataclass(frozen=True)
class Features:
    """One row per (model, plan); float arrays of shape [P] (collective slots: [P, len(SLOTS)])."""

    layers: np.ndarray
    hidden: np.ndarray
    vocab: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    ep: np.ndarray
    dense_w_bytes: np.ndarray  # non-expert weights read every step (embedding table excluded)
    dense_gemm_s: np.ndarray  # seconds per token at the spec-sheet peak for non-expert GEMMs
    gemm_calls: np.ndarray  # dense GEMM calls per forward (their fixed latency)
    shared_w_bytes: np.ndarray  # the shared experts' part of dense_w_bytes, dense_gemm_s and gemm_calls: run on a
    shared_gemm_s: np.ndarray  # second stream beside the routed experts at small batches (`cost/step.py: _gemms`)
    shared_calls: np.ndarray
    gemm_e_bw: np.ndarray
    gemm_e_f: np.ndarray
    quant_us: np.ndarray  # fixed microseconds of the input quantizations the engine runs as kernels of their own
    moe_layers: np.ndarray
    experts: np.ndarray  # routed experts of the model
    topk: np.ndarray
    moe_hidden: np.ndarray
    moe_inter: np.ndarray  # one expert's intermediate width on one GPU (its TP slice)
    moe_mats: np.ndarray  # matrices per expert (3 gated, 2 for relu2)
    moe_b_w: np.ndarray  # bytes per expert weight, scales included
    moe_peak: np.ndarray  # FLOP/s of the dtype the expert GEMMs compute in
    moe_t0_us: np.ndarray
    moe_e_bw: np.ndarray
    moe_e_f: np.ndarray
    moe_kappa: np.ndarray
    moe_marlin: np.ndarray  # 1: the experts run Marlin W4A16 (INT4; costed by `cost/marlin.py`), else 0
    moe_fpc: np.ndarray  # Marlin: the GPU's tensor FLOPs per SM cycle and its mma.sync FLOPs per SM cycle
    moe_mma: np.ndarray  # (`marlin.gpu_rates`; 1 when not Marlin)
    attn_layers: np.ndarray  # full-context softmax/MLA layers
    attn_heads: np.ndarray  # query heads per GPU
    attn_kv_heads: np.ndarray  # KV heads per GPU (MLA: 1 latent)
    attn_head_dim: np.ndarray  # (K + V) / 2 per KV head (MLA: latent / 2)
    win_layers: np.ndarray
    win_heads: np.ndarray
    win_kv_heads: np.ndarray
    win_head_dim: np.ndarray
    index_bytes: np.ndarray  # DSA indexer cache bytes per context token per layer (0 without DSA)
    index_topk: np.ndarray  # tokens DSA attends to (0 without DSA)
    index_flops: np.ndarray  # DSA indexer FLOPs per (query token, context token), all layers: 2 heads x dim x layers
    b_kv: np.ndarray
    attn_t0_us: np.ndarray
    attn_e_bw: np.ndarray
    attn_e_f: np.ndarray
    attn_mla: np.ndarray  # 1: the full layers are MLA (decode costed by `kernels.mla_decode_us`)
    mla_latent: np.ndarray  # MLA latent width (without the RoPE part)
    mla_rope: np.ndarray
    kv_full: np.ndarray  # KV bytes per context token, full-attention layers (capacity)
    kv_win: np.ndarray  # KV bytes per context token, windowed layers
    window: np.ndarray
    state_bytes: np.ndarray  # linear-attention/mamba state per sequence
    state_step_bytes: np.ndarray  # of it, what a decode step reads outside the Gated DeltaNet kernels
    gdn_layers: np.ndarray  # Gated DeltaNet layers, their value heads per GPU and state head dims
    gdn_heads: np.ndarray
    gdn_dk: np.ndarray
    gdn_dv: np.ndarray
    attn_full_flops: np.ndarray  # prefill attention FLOPs per (token, context token), full layers
    attn_win_flops: np.ndarray
    pre_bytes: np.ndarray  # prefill attention bytes per prompt token (Q, O, K, V), all layers
    pre_t0_us: np.ndarray  # prefill attention: fixed latency per call, efficiencies (`kernels.prefill_params`)
    pre_e_bw: np.ndarray
    pre_e_f: np.ndarray
    coll_calls: np.ndarray  # [P, S] calls per forward of each collective slot (`collectives.SLOTS`)
    coll_bytes: np.ndarray  # [P, S] message bytes per unit (token, sampled row, or the whole message)
    coll_group: np.ndarray  # [P, S] GPUs in the slot's group
    coll_span: np.ndarray  # [P, S] fast domains the slot's group spans (1: no NIC crossed, `hardware/cluster.py`)
    kv_room: np.ndarray  # KV cache bytes on one GPU (one PP stage of one DP rank)
    num_seqs: np.ndarray  # max_num_seqs per DP rank (`EngineArgs`)
    batched_tokens: np.ndarray  # the scheduler's token budget per step and DP rank (`EngineArgs`)
    graph_max: np.ndarray  # the largest decode batch padded to a CUDA graph (0: no padding, `step.pad_tokens`)
    sched_ahead: np.ndarray  # steps the scheduler prepares ahead of the GPU (`EngineArgs.scheduled_ahead`)
    spec_k: np.ndarray  # MTP tokens drafted per step (0: no speculation)
    spec_tokens: np.ndarray  # expected tokens per sequence per step (1 without speculation)
    tbo: np.ndarray  # 1: SGLang's two-batch overlap (`EngineArgs.two_batch_overlap`, `cost/tbo.py`), else 0
    sort_elems: np.ndarray  # logits sorted per sampled row each step: the vocabulary (`EngineArgs.sort_sampler`), or 0
    fits: np.ndarray

    @staticmethod
    def stack(rows: list[dict[str, object]]) -> Features:
        """Features of `plan_features` rows (one per plan)."""
        return Features.from_flat(np.stack([Features.flat(r) for r in rows]))

    @staticmethod
    def flat(row: dict[str, object]) -> np.ndarray:
        """One row's fields in field order as one vector (a [S] field takes S entries): rows stack in one call."""
        return np.concatenate([np.ravel(np.asarray(row[f.name], dtype=float)) for f in fields(Features)])

    @staticmethod
    def from_flat(matrix: np.ndarray) -> Features:
        """Features of stacked `flat` rows ([P, width])."""
        out, col = {}, 0
        for f in fields(Features):
            width = len(SLOTS) if f.name.startswith("coll_") else 1
            block = matrix[:, col:col + width]
            out[f.name] = block if width > 1 else block[:, 0]
            col += width
        return Features(**out)

    def take(self, index: np.ndarray) -> Features:
        """The rows at `index` (bool mask or positions)."""
        return Features(**{f.name: getattr(self, f.name)[index] for f in fields(Features)})

    def grid(self) -> Features:
        """Each [P] field as [P, 1, 1] (and [P, S] as [P, 1, 1, S]) to broadcast against concurrency x lengths."""
        return Features(**{f.name: getattr(self, f.name)[:, None, None] for f in fields(Features)})


def engine_collectives(arch: ModelArch, plan: Plan, weights: tuple[WeightGroup, ...], args: EngineArgs,
                       cluster: Cluster | None = None) -> tuple[Collective, ...]:
    """The forward's collectives (`collectives.step_collectives`) under the resolved engine: its rank order and the
    MoE all-to-all it was asked for (`EngineArgs.moe_a2a_backend`)."""
    return step_collectives(arch, plan, weights, cluster, args.engine, args.moe_a2a_backend == "deepep")


def plan_features(arch: ModelArch, plan: Plan, hw: HardwareProfile, args: EngineArgs,
                  weights: tuple[WeightGroup, ...], mem: MemoryFit, cluster: Cluster | None = None
                  ) -> dict[str, object]:
    """One row of Features, under the resolved engine arguments (on `cluster` when the plan spans nodes)."""
    fp4 = "fp4" in hw.gpu.native_formats
    slots = slot_rows(engine_collectives(arch, plan, weights, args, cluster))
    b = kv_elem_bytes(args)
    return {
        "layers": arch.num_layers, "hidden": arch.hidden_size, "vocab": arch.vocab_size, "tp": plan.tp,
        "pp": plan.pp, "dp": plan.dp, "ep": plan.ep, **_dense(arch, plan, hw, weights, fp4, args.engine),
        **_moe(arch, plan, hw, weights, fp4), **_attention(arch, plan, b, hw.gpu.sm or ""),
        "kv_full": arch.kv_bytes_per_token(plan.tp, b), "kv_win": arch.windowed_kv_bytes_per_token(plan.tp, b),
        "state_bytes": arch.state_bytes_per_seq(plan.tp), **_gdn(arch, plan),
        **{f"coll_{k}": [slots[s.name][j] for s in SLOTS] for j, k in enumerate(("calls", "bytes", "group", "span"))},
        "kv_room": max(mem.kv_cache_bytes, 0.0), "num_seqs": args.max_num_seqs,
        "batched_tokens": args.max_num_batched_tokens, "graph_max": _padded_graphs(args),
        "sched_ahead": args.scheduled_ahead, **_speculation(arch, args), "tbo": float(args.two_batch_overlap),
        "sort_elems": float(arch.vocab_size if args.sort_sampler else 0), "fits": float(mem.fits),
    }


def _dense(arch: ModelArch, plan: Plan, hw: HardwareProfile, weights: tuple[WeightGroup, ...],
           fp4: bool, engine: str) -> dict[str, float]:
    """Non-expert GEMMs: bytes read and seconds at peak per token, calls, the kernel parameters of the
    format holding most of their bytes, and the input quantizations the engine leaves unfused
    (`kernels.VLLM_UNFUSED_QUANT`)."""
    dense_w = dense_s = shared_w = shared_s = 0.0
    by_fmt: dict[str, float] = {}
    for w in weights:
        if w.shard == "expert" or w.name == "embed":
            continue
        share = plan.tp if w.shard in ("tp", "vocab") else 1
        b, s = w.bytes / share, 2 * w.params / share / hw.gpu.dense_flops_per_s(compute_dtype(w.fmt))
        dense_w, dense_s = dense_w + b, dense_s + s
        if w.name == "shared_experts":
            shared_w, shared_s = shared_w + b, shared_s + s
        by_fmt[w.fmt] = by_fmt.get(w.fmt, 0.0) + w.bytes
    fmt = max(by_fmt, key=lambda f: by_fmt[f]) if by_fmt else "bf16"
    calls = sum(ATTN_GEMMS[g.kind] * g.layers for g in arch.attn_groups) + MLP_GEMMS * arch.dense_mlp_layers + 1
    shared_calls = MLP_GEMMS * arch.moe.moe_layers if arch.moe is not None and arch.moe.shared_intermediate else 0
    if arch.moe is not None:
        calls += arch.moe.moe_layers + shared_calls
    g = kernels.gemm_params(fmt, fp4)
    # per layer, by the format of the group whose inputs they quantize (attention projections, dense MLPs)
    slot = {"attn": 0, "dense_mlp": 1}
    quant_us = sum(kernels.VLLM_UNFUSED_QUANT.get(w.fmt, (0, 0))[slot[w.name]] * w.layers
                   * kernels.quant_t0_us(w.fmt, fp4) for w in weights if w.name in slot) if engine == "vllm" else 0.0
    return {"dense_w_bytes": dense_w, "dense_gemm_s": dense_s, "gemm_calls": float(calls),
            "shared_w_bytes": shared_w, "shared_gemm_s": shared_s, "shared_calls": float(shared_calls),
            "gemm_e_bw": g["e_bw"], "gemm_e_f": g["e_f"], "quant_us": float(quant_us)}


def _moe(arch: ModelArch, plan: Plan, hw: HardwareProfile, weights: tuple[WeightGroup, ...],
         fp4: bool) -> dict[str, float]:
    """One GPU's share of a MoE layer: experts split by TP x DP / EP (`Plan.moe_tp`), their format's kernel."""
    moe = arch.moe
    routed = [w for w in weights if w.shard == "expert"]
    if moe is None or not routed:
        zero = ("moe_layers", "experts", "topk", "moe_hidden", "moe_inter", "moe_mats", "moe_b_w", "moe_peak",
                "moe_t0_us", "moe_e_bw", "moe_e_f", "moe_kappa", "moe_marlin", "moe_fpc", "moe_mma")
        ones = ("moe_inter", "moe_mats", "moe_peak", "moe_e_bw", "moe_e_f", "moe_fpc", "moe_mma")
        return {k: (1.0 if k in ones else 0.0) for k in zero}
    fmt = max(routed, key=lambda w: w.params).fmt
    params = sum(w.params for w in routed) / (moe.num_experts * moe.moe_layers)
    mats = params / (arch.hidden_size * moe.expert_intermediate)
    k = kernels.moe_params(fmt, fp4, hw.gpu.sm or "")
    peak = hw.gpu.dense_flops_per_s("fp4" if fmt == "nvfp4" and fp4 else compute_dtype(fmt))
    return {"moe_layers": moe.moe_layers, "experts": moe.num_experts, "topk": moe.experts_per_token,
            "moe_hidden": arch.hidden_size, "moe_inter": moe.expert_intermediate / plan.moe_tp,
            "moe_mats": round(mats), "moe_b_w": bytes_per_param(fmt), "moe_peak": peak,
            "moe_t0_us": k["t0_us"], "moe_e_bw": k["e_bw"], "moe_e_f": k["e_f"], "moe_kappa": k["kappa_ns_per_B"],
            **_marlin(fmt, hw.gpu.sm or "")}


def _marlin(fmt: str, sm: str) -> dict[str, float]:
    """Marlin's per-GPU rates when the experts run it (`kernels.is_marlin`)."""
    if not kernels.is_marlin(fmt):
        return {"moe_marlin": 0.0, "moe_fpc": 1.0, "moe_mma": 1.0}
    fpc, mma = marlin.gpu_rates(sm)
    return {"moe_marlin": 1.0, "moe_fpc": fpc, "moe_mma": mma}


def _padded_graphs(args: EngineArgs) -> int:
    """The largest decode batch padded up to a captured CUDA graph (`EngineArgs.cuda_graph_sizes`): vLLM and SGLang
    pad to the next capture size (`vllm/config/vllm.py:_set_cudagraph_sizes`, SGLang `cuda_graph_runner.py`);
    TensorRT-LLM's benchmark recipes turn its padding on (`CudaGraphConfig.enable_padding`)."""
    return args.cuda_graph_max


def _speculation(arch: ModelArch, settings: EngineArgs) -> dict[str, float]:
    """MTP speculation of this case (`cost/speculative.py`): off without MTP heads or a known acceptance; a
    measured acceptance length (`EngineArgs.spec_accept_len`) is the tokens per step itself, at most k + 1."""
    from advisor.cost.speculative import acceptance_for, acceptance_length

    k = (settings.speculative_tokens or arch.mtp_layers) if settings.speculative and arch.mtp_layers else 0
    if k and settings.spec_accept_len is not None:
        return {"spec_k": float(k), "spec_tokens": min(settings.spec_accept_len, k + 1.0)}
    lengths, _ = acceptance_for(arch.model, settings.spec_acceptance)
    if not k or lengths is None:
        return {"spec_k": 0.0, "spec_tokens": 1.0}
    return {"spec_k": float(k), "spec_tokens": acceptance_length(k, lengths)}


def _gdn(arch: ModelArch, plan: Plan) -> dict[str, float]:
    """Gated DeltaNet layers (costed by `kernels.gdn_*_us`) and the other linear/mamba state a step reads."""
    gdn = [g for g in arch.attn_groups if g.kind == "linear" and g.kv_heads]
    other = sum(g.layers * g.state_elems * 2.0 / plan.tp for g in arch.attn_groups
                if g.kind in ("linear", "mamba") and g not in gdn)
    g = gdn[0] if gdn else None
    return {"state_step_bytes": other, "gdn_layers": float(sum(x.layers for x in gdn)),
            "gdn_heads": g.kv_heads / plan.tp if g else 0.0, "gdn_dk": float(g.k_dim) if g else 0.0,
            "gdn_dv": float(g.v_dim) if g else 0.0}


def _attention(arch: ModelArch, plan: Plan, b_kv: float, sm: str) -> dict[str, float]:
    """Per-GPU attention geometry of the full-context and the windowed layers, DSA's indexer, and the decode
    kernel's parameters for this KV dtype."""
    out = {"attn_layers": 0.0, "attn_heads": 0.0, "attn_kv_heads": 1.0, "attn_head_dim": 1.0, "win_layers": 0.0,
           "win_heads": 0.0, "win_kv_heads": 1.0, "win_head_dim": 1.0, "window": 0.0, "index_bytes": 0.0,
           "index_topk": 0.0, "index_flops": 0.0, "attn_full_flops": 0.0, "attn_win_flops": 0.0, "attn_mla": 0.0,
           "mla_latent": 0.0, "mla_rope": 0.0, "pre_bytes": 0.0}
    for g in arch.attn_groups:
        if g.kind in ("linear", "mamba"):
            continue
        heads = g.num_heads / plan.tp
        dk, dv = g.k_dim, g.v_dim or g.k_dim
        if g.kind == "mla":
            kv_heads, head_dim = 1.0, g.latent_dim / 2  # one latent vector per token, K and V read once
            out["attn_mla"], out["mla_rope"] = 1.0, float(g.rope_dim)
            out["mla_latent"] = float(g.latent_dim - g.rope_dim)
            pre_kv_heads = heads  # prefill attends with the up-projected heads (`kernels` docstring)
            if g.index_topk:  # DSA's sparse prefill attends over the latent (absorbed form), top-k tokens only
                dk, dv = g.latent_dim, g.latent_dim - g.rope_dim
                out["index_flops"] += 2.0 * g.index_heads * g.index_dim * g.layers  # replicated on every rank
        else:
            kv_heads, head_dim = max(1.0, g.kv_heads / plan.tp), (dk + dv) / 2
            pre_kv_heads = kv_heads
        flops = 2 * heads * (dk + dv) * g.layers  # QK^T and PV per (query token, context token)
        out["pre_bytes"] += (heads * 2 + pre_kv_heads * b_kv) * (dk + dv) * g.layers
        pre = "win" if g.window is not None else "attn"
        out[f"{pre}_layers"] += g.layers
        out[f"{pre}_heads"], out[f"{pre}_kv_heads"], out[f"{pre}_head_dim"] = heads, kv_heads, head_dim
        out["attn_win_flops" if g.window is not None else "attn_full_flops"] += flops
        if g.window is not None:
            out["window"] = max(out["window"], float(g.window))
        if g.index_bytes_per_token:
            out["index_bytes"], out["index_topk"] = float(g.index_bytes_per_token), float(g.index_topk)
    kv = "fp8" if b_kv == 1.0 else "bf16"
    a = kernels.attention_params(kv, sm)
    eff = kernels.mla_params(kv, sm) if out["attn_mla"] else a
    pf = kernels.prefill_params(kv, sm)
    pre_e_f = kernels.mla_prefill_params(kv)["e_f"] if out["attn_mla"] else pf["e_f"]
    return {**out, "b_kv": b_kv, "attn_t0_us": a["t0_us"], "attn_e_bw": eff["e_bw"], "attn_e_f": eff["e_f"],
            "pre_t0_us": pf["t0_us"], "pre_e_bw": pf["e_bw"], "pre_e_f": pre_e_f}
