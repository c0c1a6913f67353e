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
from advisor.cost.collectives import SLOTS, slot_rows, step_collectives
from advisor.cost.memory import MemoryFit, kv_elem_bytes
from advisor.cost.plan import Plan
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile


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
    coll_calls: np.ndarray  # [P, S] calls per forward of each collective slot (`collectives.SLOTS`)
    coll_bytes: np.ndarray  # [P, S] message bytes per unit (token, sampled row, or the whole message)
    coll_group: np.ndarray  # [P, S] GPUs in the slot's group
    kv_room: np.ndarray  # KV cache bytes on one GPU (one PP stage of one DP rank)
    num_seqs: np.ndarray  # max_num_seqs
    fits: np.ndarray

    @staticmethod
    def stack(rows: list[dict[str, object]]) -> Features:
        return Features(**{f.name: np.array([r[f.name] for r in rows], dtype=float) for f in fields(Features)})

    def take(self, index: np.ndarray) -> Features:
        """The rows at `index` (bool mask or positions)."""
        return Features(**{f.name: getattr(self, f.name)[index] for f in fields(Features)})

    def grid(self) -> Features:
        """Each [P] field as [P, 1, 1] (and [P, S] as [P, 1, 1, S]) to broadcast against concurrency x lengths."""
        return Features(**{f.name: getattr(self, f.name)[:, None, None] for f in fields(Features)})


def plan_features(arch: ModelArch, plan: Plan, hw: HardwareProfile, settings: Settings,
                  weights: tuple[WeightGroup, ...], mem: MemoryFit) -> dict[str, object]:
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
    window, a_full, a_win = 0.0, 0.0, 0.0
    for g in arch.attn_groups:
        heads = g.num_heads / t
        width = 2 * g.latent_dim if g.kind == "mla" else g.k_dim + (g.v_dim or g.k_dim)
        flops = 2 * heads * width * g.layers  # QK^T and PV per context token (MLA absorbed: both over the latent)
        if g.window is not None:
            window = max(window, g.window)
            a_win += flops
        elif g.kind not in ("linear", "mamba"):
            a_full += flops
    n_experts = moe.num_experts if moe else 0
    moe_layers = moe.moe_layers if moe else 0
    per_expert_div = max(n_experts * moe_layers, 1)
    slots = slot_rows(step_collectives(arch, plan, weights))
    return {
        "layers": arch.num_layers, "hidden": arch.hidden_size, "vocab": arch.vocab_size, "tp": t, "pp": plan.pp,
        "dp": plan.dp, "ep": plan.ep, "dense_w_bytes": dense_w, "dense_gemm_s": dense_gemm,
        "moe_layers": moe_layers, "experts": n_experts, "topk": moe.experts_per_token if moe else 0,
        "expert_bytes": expert_total_bytes / per_expert_div, "expert_gemm_s": expert_total_s / per_expert_div,
        "kv_full": arch.kv_bytes_per_token(t, b), "kv_win": arch.windowed_kv_bytes_per_token(t, b),
        "window": window, "state_bytes": arch.state_bytes_per_seq(t),
        "attn_full_flops": a_full, "attn_win_flops": a_win,
        **{f"coll_{k}": [slots[s.name][j] for s in SLOTS] for j, k in enumerate(("calls", "bytes", "group"))},
        "kv_room": max(mem.kv_cache_bytes, 0.0), "num_seqs": settings.num_seqs(hw.gpu.memory_bytes),
        "fits": float(mem.fits),
    }
