"""Marlin's W4A16 fused MoE (INT4 experts: vLLM `fused_moe/fused_marlin_moe.py`, kernel
`csrc/moe/marlin_moe_wna16/marlin_template.h`), one model for every GPU generation, its parameters shared by all
GPUs and fitted to the kernel tables' MarlinExperts rows (`scripts/fit_kernels.py`, model `marlin_moe`, in
`kernel_params.json`; the tables' `int4_wo` rows time vLLM's WNA16 kernels instead, `kernels.WNA16_TABLE_FAMILY`).

One call runs two Marlin GEMMs (gate-up, down) with SiLU-and-mul between and `moe_sum` after. vLLM pads each
expert's tokens to M-blocks of `bm` rows (`moe_align_block_size`; bm the first of 8, 16, 32, 48, 64 with
M k / E_local / bm < 0.9, `fused_marlin_moe`), and the threadblocks stream over (block, n-tile, k-tile)
(`marlin_template.h`): every block dequantizes its expert's 4-bit weights again and multiplies them with warp-level
`mma.sync.m16n8k16`. Three limits, joined by a p-norm:

    t = t0 + (t_dram^p + t_dq^p + t_mma^p)^(1/p)
    t_dram = (n_act W b_w + pairs (6 h + 12 I)) / (e_bw bw)      weights of the touched experts, activations
    t_dq   = blocks W / (w_sm cyc)                                 dequantization, per block, on the SMs
    t_mma  = blocks bm 2 W / (e_f r_mma cyc)                       the padded rows on the tensor cores

with W = mats h I weights per expert (its TP slice), cyc = the GPU's SM cycles per second (spec BF16 peak over
`TENSOR_FLOPS_PER_SM_CYCLE`), r_mma the mma.sync FLOPs per SM cycle (the spec rate where mma.sync is the
generation's tensor-core instruction, `MMA_SYNC_PEAK_SM`; elsewhere the fitted `mma_sync_flops_per_sm_cycle`).
Activation bytes per (token, expert) pair: the input row read (2 h), gate-up written (4 I) and read by SiLU-and-mul
(4 I), its output written (2 I) and read (2 I), the down projection written (2 h) and read by `moe_sum` (2 h)
(`fused_marlin_moe`: intermediate_cache1/2/3, BF16). Published behaviour the fit is checked against: the Marlin
README (IST-DASLab/marlin) reports close to ideal 4x speed-ups over FP16 up to batch 16-32 on Ampere and "not yet
optimized for Hopper" (its artifact README; Frantar et al., arXiv 2408.11743).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from advisor.cost.kernels import params

# Dense FP16/BF16 tensor-core FLOPs per SM per clock, by generation: the spec-sheet peak over SMs x clock.
# sm80: A100 312 TFLOPS / (108 SMs x 1.41 GHz) = 2048; sm86/sm89: A10 125 TFLOPS / (72 x 1.695 GHz), L40S 362
# TFLOPS / (142 x 2.52 GHz) = 1024 (GeForce parts quote FP32-accumulate at half that); sm90: H100 SXM 989.4 TFLOPS
# / (132 x 1.83 GHz) = 4096 (glennklockwood.com/garden/processors/h100); sm100/sm103: B200 2,250 TFLOPS / (148 SMs x
# 1.86 GHz tensor clock) = 8192 (hmc-tech.com/gpus/nvidia-b200-vs-nvidia-b100: 148 SMs, 1.86 GHz); sm120: RTX PRO
# 6000 467.8 TFLOPS / (188 SMs x 2.43 GHz) = 1024 (AIC rtx_pro_6000_server.yaml "scaled to 2430 MHz"; 24,064 CUDA
# cores = 188 SMs x 128). [derived] A generation not listed is costed as sm90.
TENSOR_FLOPS_PER_SM_CYCLE = {"sm80": 2048.0, "sm86": 1024.0, "sm87": 1024.0, "sm89": 1024.0, "sm90": 4096.0,
                             "sm100": 8192.0, "sm103": 8192.0, "sm120": 1024.0, "sm121": 1024.0}
# Generations whose spec-sheet peak is quoted for warp-level mma.sync (Ampere, Ada, consumer Blackwell); sm90's is
# for wgmma and sm100/sm103's for tcgen05, which Marlin does not issue
MMA_SYNC_PEAK_SM = frozenset({"sm80", "sm86", "sm87", "sm89", "sm120", "sm121"})
BLOCK_M = (8, 16, 32, 48, 64)  # vLLM `fused_marlin_moe` block_size_m candidates


def marlin_params() -> dict[str, float]:
    """t0_us, e_bw, w_per_sm_cycle, e_f, mma_sync_flops_per_sm_cycle and the p-norm's p (shared by every GPU)."""
    P = params()["marlin_moe"]
    return {**P["by_kind"]["marlin"], "p": float(P["p"])}


def gpu_rates(sm: str, f: dict[str, Any] | None = None) -> tuple[float, float]:
    """(tensor FLOPs per SM cycle, Marlin's mma.sync FLOPs per SM cycle) of a GPU generation."""
    f = f or marlin_params()
    fpc = TENSOR_FLOPS_PER_SM_CYCLE.get(sm, TENSOR_FLOPS_PER_SM_CYCLE["sm90"])
    return fpc, fpc if sm in MMA_SYNC_PEAK_SM else float(f["mma_sync_flops_per_sm_cycle"])


def block_m(pairs_per_local_expert: Any) -> Any:
    """vLLM `fused_marlin_moe`: the first bm of 8, 16, 32, 48 with M k / E_local / bm < 0.9, else 64 (M k counts the
    pairs of every rank: topk_ids are global)."""
    ratio = np.asarray(pairs_per_local_expert, dtype=float)
    bm = np.full(ratio.shape, float(BLOCK_M[-1]))
    for b in reversed(BLOCK_M[:-1]):
        bm = np.where(ratio / b < 0.9, float(b), bm)
    return bm


def blocks(n_act: Any, pairs: Any, bm: Any) -> Any:
    """M-blocks over the local experts under uniform routing: each touched expert's tokens padded to bm, its last
    block half full on average, n_act max(1, pairs / (n_act bm) + 1/2). (The fit counts each table row's blocks
    from its own routing, `scripts/kernel_tables.py: marlin_rows`.)"""
    n = np.maximum(n_act, 1e-9)
    return n_act * np.maximum(1.0, pairs / (n * bm) + 0.5)


def split(f: dict[str, Any], n_act: Any, pairs: Any, nblk: Any, bm: Any, hidden: Any, inter: Any, mats: Any,
          b_w: Any, bw: Any, peak_bf16: Any, fpc: Any, mma: Any, p: float) -> tuple[Any, Any]:
    """Seconds of one Marlin MoE call beyond t0 as (the DRAM stream, the excess of the p-norm over it); `f` holds
    e_bw, w_per_sm_cycle, e_f (module docstring); fpc and mma per `gpu_rates`."""
    w = mats * hidden * inter
    cyc = peak_bf16 / fpc
    t_dram = (n_act * w * b_w + pairs * (6 * hidden + 12 * inter)) / (bw * f["e_bw"])
    t_dq = nblk * w / (f["w_per_sm_cycle"] * cyc)
    t_mma = nblk * bm * 2 * w / (f["e_f"] * mma * cyc)
    both = (t_dram ** p + t_dq ** p + t_mma ** p) ** (1 / p)
    return t_dram, both - t_dram


def moe_us(f: dict[str, Any], n_act: Any, pairs: Any, nblk: Any, bm: Any, hidden: Any, inter: Any, mats: Any,
           b_w: Any, bw: Any, peak_bf16: Any, fpc: Any, mma: Any, p: float) -> Any:
    """Microseconds of one Marlin MoE call on one GPU: t0 + the three limits (module docstring)."""
    t_dram, excess = split(f, n_act, pairs, nblk, bm, hidden, inter, mats, b_w, bw, peak_bf16, fpc, mma, p)
    return f["t0_us"] + (t_dram + excess) * 1e6
