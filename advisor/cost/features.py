"""Per-(model, plan) quantities the step-time model needs, stacked into numpy arrays [P].

Everything is "per GPU of one TP group, summed over PP stages" (a decode token passes every stage in
turn). Bytes: weights read per step; FLOPs as seconds at the tensor-core peak of each group's format
(divided by the fitted FLOP efficiency later); KV and attention per context token.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from advisor.arch.formats import compute_dtype
from advisor.arch.model import ModelArch, WeightGroup
from advisor.cost.memory import MemoryFit, kv_elem_bytes
from advisor.cost.plan import Plan
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile

# Activations dispatched to experts under DP+EP: block-FP8 models quantize before dispatch (1 + 4/128
# bytes per element, `prepare_finalize/naive_dp_ep.py:_quantize_and_setup_dispatch`), others BF16.
DISPATCH_BYTES = {"fp8-block": 1 + 4 / 128}


@dataclass
class Features:
    """One row per (model, plan); all fields are float arrays of shape [P]."""

    layers: np.ndarray
    hidden: np.ndarray
    vocab: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    ep: np.ndarray
    dense_w_bytes: np.ndarray  # non-expert weights read every step (embedding table excluded)
    dense_gemm_s: np.ndarray  # seconds per token at peak for non-expert GEMMs
    moe_layers: np.ndarray
    experts: np.ndarray
    topk: np.ndarray
    expert_bytes: np.ndarray  # one expert of one layer, bytes on one GPU
    expert_gemm_s: np.ndarray  # seconds at peak per token routed to one expert (one layer, one GPU share)
    kv_full: np.ndarray  # KV bytes per context token, full-attention layers
    kv_win: np.ndarray  # KV bytes per context token, windowed layers
    window: np.ndarray
    state_bytes: np.ndarray  # linear-attention/mamba state per sequence
    attn_full_flops: np.ndarray  # attention FLOPs per (token, context token), full layers
    attn_win_flops: np.ndarray
    ar_calls: np.ndarray  # [T, H] allreduces per forward over TP (incl. embedding)
    tiny_ar_calls: np.ndarray
    a2a_layers: np.ndarray  # MoE layers exchanging tokens across DP ranks (dispatch + combine)
    dispatch_bytes: np.ndarray
    kv_room: np.ndarray  # KV cache bytes on one GPU (one PP stage of one DP rank)
    num_seqs: np.ndarray  # max_num_seqs
    fits: np.ndarray

    @staticmethod
    def stack(rows: list[dict[str, float]]) -> Features:
        return Features(**{f.name: np.array([r[f.name] for r in rows], dtype=float) for f in fields(Features)})


def plan_features(arch: ModelArch, plan: Plan, hw: HardwareProfile, settings: Settings,
                  weights: tuple[WeightGroup, ...], mem: MemoryFit) -> dict[str, float]:
    """One row of Features."""
    t, moe = plan.tp, arch.moe
    rate = hw.gpu.dense_flops_per_s
    dense_w = dense_gemm = expert_total_bytes = expert_total_s = 0.0
    for w in weights:
        if w.shard == "expert":
            per_gpu = w.bytes / plan.moe_tp
            expert_total_bytes += per_gpu
            expert_total_s += 2 * w.params / plan.moe_tp / rate(compute_dtype(w.fmt))
            continue
        share = t if w.shard in ("tp", "vocab") else 1
        if w.name != "embed":
            dense_w += w.bytes / share
            dense_gemm += 2 * w.params / share / rate(compute_dtype(w.fmt))
    b, _ = kv_elem_bytes(arch, settings)
    kv_full = arch.kv_bytes_per_token(t, b)
    kv_win, window, a_full, a_win = 0.0, 0.0, 0.0, 0.0
    for g in arch.attn_groups:
        heads = g.num_heads / t
        width = 2 * g.latent_dim if g.kind == "mla" else g.k_dim + (g.v_dim or g.k_dim)
        flops = 2 * heads * width * g.layers  # QK^T and PV per context token (MLA absorbed: both over the latent)
        if g.window is not None:
            kv_win += g.layers * (max(1.0, g.kv_heads / t) * (g.k_dim + g.v_dim) * b)
            window = max(window, g.window)
            a_win += flops
        elif g.kind not in ("linear", "mamba"):
            a_full += flops
    n_experts = moe.num_experts if moe else 0
    moe_layers = moe.moe_layers if moe else 0
    per_expert_div = max(n_experts * moe_layers, 1)
    dispatch = max((w.fmt for w in weights if w.shard == "expert"), key=lambda f: DISPATCH_BYTES.get(f, 2.0),
                   default="bf16")
    return {
        "layers": arch.num_layers, "hidden": arch.hidden_size, "vocab": arch.vocab_size, "tp": t, "pp": plan.pp,
        "dp": plan.dp, "ep": plan.ep, "dense_w_bytes": dense_w, "dense_gemm_s": dense_gemm,
        "moe_layers": moe_layers, "experts": n_experts, "topk": moe.experts_per_token if moe else 0,
        "expert_bytes": expert_total_bytes / per_expert_div, "expert_gemm_s": expert_total_s / per_expert_div,
        "kv_full": kv_full, "kv_win": kv_win, "window": window, "state_bytes": arch.state_bytes_per_seq(t),
        "attn_full_flops": a_full, "attn_win_flops": a_win,
        # the MoE reduce becomes dispatch/combine when DP > 1 (vLLM `fused_moe/config.py:
        # FusedMoEParallelConfig.make`, `device_communicators/all2all.py: AgRsAll2AllManager`)
        "ar_calls": (arch.allreduces_per_forward + 1 - (moe_layers if plan.dp > 1 else 0)) if t > 1 else 0,
        "tiny_ar_calls": arch.tiny_allreduces_per_forward if t > 1 else 0,
        "a2a_layers": moe_layers if plan.dp > 1 else 0,
        "dispatch_bytes": DISPATCH_BYTES.get(dispatch, 2.0),
        "kv_room": max(mem.kv_cache_bytes, 0.0), "num_seqs": settings.num_seqs(hw.gpu.memory_bytes),
        "fits": float(mem.fits),
    }
