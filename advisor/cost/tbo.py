"""Two-batch overlap (TBO): SGLang's `--enable-two-batch-overlap` (off by default; `server_args.py`, which refuses it
with `--moe-a2a-backend none`, so it runs with DeepEP's dispatch/combine). Each DP rank splits its batch into two
micro-batches (`batch_overlap/two_batch_overlap.py: compute_split_seq_index`: decode at half the sequences, prefill
at the sequence boundary nearest half the tokens) and runs their layers as interleaved stages on one stream
(`batch_overlap/operations.py: execute_overlapped_operations`): while one micro-batch computes, the other's
dispatch or combine is in flight, and a stage waits only for the part of that exchange its compute did not cover.

Per MoE layer, with one micro-batch's times at half the tokens (each through the step model's own kernels, so each
half pays its kernel floors and re-reads the weights): X its attention-side compute (`mech_attention` + the dense
GEMMs `mech_gemm`, shared experts included), G the dense GEMMs alone, A attention alone, M its routed experts
(`mech_moe`), d and c its dispatch and combine (the MoE exchange slots at half the tokens):

- prefill, `operations_strategy.py: _compute_moe_deepseek_blog_prefill` (two stages per layer, delta 0: [shared
  experts, combine wait, attention, gate, dispatch send] and [dispatch wait, experts, combine send]; one
  micro-batch's dispatch is in flight while the other computes its attention side, its combine while the other
  runs its experts):

      t_layer = max(X, d) + max(M, d) + max(M, c) + max(X, c)

  with the DeepGEMM GEMMs (dense and MoE) on `SMs - 20` SMs: the strategy sets `deep_gemm_num_sms = SMs -
  DeepEPConfig.num_sms` (DeepEP normal keeps 20, `wide_ep.DEEPEP_NUM_SMS`), so their FLOP efficiency x (SMs -
  20) / SMs;
- decode, `_compute_moe_deepseek_blog_decode` (five stages, micro-batch b two stages behind: the dispatch is sent
  before the shared experts and is in flight over them and the other's attention prepare; the combine over the
  other's attention core; DeepEP low-latency receives through hooks, no SMs held):

      t_layer = 2 (max(G, d) + M + max(A, c))

Summed over the layers as sums of the step's parts (every MoE layer alike), the step is `t_layer` on the whole
step's half parts, plus the collectives outside the exchange and the fixed per-layer/per-step terms of the full
step, once. The exposed exchange (what the max terms add beyond 2 (X + M)) is the step's `comm`. A plan with no MoE
exchange, or TBO off, is the step as without.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from advisor.cost.collectives import A2A_COMBINE, A2A_DISPATCH, COMBINE, DISPATCH
from advisor.cost.features import Features
from advisor.hardware.wide_ep import DEEPEP_NUM_SMS, DEVICE_SMS, MIN_DEVICE_SMS

if TYPE_CHECKING:
    from advisor.hardware import HardwareProfile

# one micro-batch's step at half the tokens under these features (`step.step_time`'s breakdown and mechanisms)
HalfStep = Callable[[Features], dict[str, np.ndarray]]
# seconds of the named collective slots for a message of these tokens per DP rank (`step_collectives.collectives_time`)
Exchange = Callable[[np.ndarray, tuple[str, ...]], np.ndarray]

DISPATCH_SLOTS = (DISPATCH.name, A2A_DISPATCH.name)
COMBINE_SLOTS = (COMBINE.name, A2A_COMBINE.name)


def gemm_sm_share(hw: HardwareProfile) -> float:
    """DeepGEMM's share of the SMs under prefill TBO: (SMs - DeepEP's 20) / SMs (module docstring)."""
    sms = DEVICE_SMS.get(hw.gpu.sm or "", MIN_DEVICE_SMS)
    return (sms - DEEPEP_NUM_SMS) / sms


def overlap_time(prefill: np.ndarray, G: np.ndarray, A: np.ndarray, M: np.ndarray, d: np.ndarray,
                 c: np.ndarray) -> np.ndarray:
    """Seconds of the MoE layers' compute and exchange under TBO from one micro-batch's parts (module docstring):
    prefill max(X, d) + max(M, d) + max(M, c) + max(X, c) with X = G + A; decode 2 (max(G, d) + M + max(A, c))."""
    X = G + A
    pre = np.maximum(X, d) + np.maximum(M, d) + np.maximum(M, c) + np.maximum(X, c)
    dec = 2 * (np.maximum(G, d) + M + np.maximum(A, c))
    return np.where(prefill, pre, dec)


def tbo_step(F: Features, hw: HardwareProfile, full: dict[str, np.ndarray], half_step: HalfStep,
             exchange: Exchange, tokens: np.ndarray, pre: np.ndarray) -> dict[str, np.ndarray]:
    """`full` (the step without overlap, `step.step_time`) replaced by the TBO step where `F.tbo` is set and the
    plan has a MoE exchange: breakdown and mechanisms as `step_time` gives them (module docstring). `tokens`: the
    full step's padded tokens per DP rank; `pre`: its prefill tokens (a prefill step where > 0)."""
    off = replace(F, tbo=np.zeros_like(F.tbo))
    is_pre = np.asarray(pre) > 0
    share = gemm_sm_share(hw)
    slow = replace(off, gemm_e_f=off.gemm_e_f * share, moe_e_f=off.moe_e_f * share)
    halves = [half_step(G) for G in (off, slow)]
    half = {k: np.where(is_pre, halves[1][k], halves[0][k]) for k in halves[0]}
    ex = {k: exchange(t, slots) for k, t, slots in (("d", tokens / 2, DISPATCH_SLOTS), ("c", tokens / 2, COMBINE_SLOTS),
                                                      ("full", tokens, DISPATCH_SLOTS + COMBINE_SLOTS))}
    G, A, M = half["mech_gemm"], half["mech_attention"], half["mech_moe"]
    moe_ex = overlap_time(is_pre, G, A, M, ex["d"], ex["c"])
    exposed = moe_ex - 2 * (G + A + M)
    other = full["mech_collectives"] - ex["full"]
    fixed = full["mech_fixed"]
    out = {"weights": 2 * half["weights"], "kv": 2 * half["kv"], "compute": 2 * half["compute"],
           "comm": exposed + other, "overhead": 2 * (half["overhead"] - half["mech_fixed"]) + fixed}
    mech = {"gemm": 2 * G, "moe": 2 * M, "attention": 2 * A, "collectives": exposed + other,
            "sampler": 2 * half["mech_sampler"], "fixed": fixed}
    on = (F.tbo > 0) & (ex["full"] > 0)
    shape = np.broadcast_shapes(*(np.shape(v) for v in full.values()))
    res = {k: np.broadcast_to(np.where(on, v, full[k]), shape) for k, v in out.items()}
    res["total"] = sum(res.values())  # type: ignore[assignment]
    res.update({f"mech_{k}": np.broadcast_to(np.where(on, v, full[f"mech_{k}"]), shape) for k, v in mech.items()})
    return res
