"""The time of one engine step: decode tokens and prefill tokens of one DP rank through every layer, composed
from the per-kernel models (`cost/kernels.py`), the collectives of the forward, and the step-level terms
the kernels do not explain (`cost/terms.py`: scheduling, sampling, small per-layer kernels, host gaps).

Per step with d decode tokens (context c each) and p prefill tokens (context c_p each), T = d + p:
- dense GEMMs: `calls` x t0 + p-norm(weights + activations / bw, T x FLOPs / peak), plus the input
  quantization kernels the engine leaves unfused (`kernels.VLLM_UNFUSED_QUANT`) at their fixed latency;
- MoE layers: the fused-MoE kernel on the busiest GPU, its tokens every DP rank's (T x dp), touched experts
  E_local (1 - (1 - k/E)^(T dp)) and (token, expert) pairs T dp k / EP plus the busiest rank's excess
  sqrt(2 mean ln EP) (the expected maximum of EP Poisson loads; vLLM's EP places experts statically, EPLB off);
- attention: the decode kernel over the decode tokens' KV (windowed layers capped at the window; DSA
  attends to `index_topk` tokens after its indexer chain, `kernels.dsa_indexer_us`: a fixed latency per layer
  and a pass over the whole context, fitted to the sparse-attention module's time beyond MLA's), prefill
  attention as FLOPs (DSA: its top-k per token, plus the indexer's logits over the whole context and the chain's
  fixed latency);
- collectives (`cost/collectives.py`), timed on the profile's measured terms;
- fixed time: layers x the per-layer term + the per-step term.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from advisor.cost import kernels, marlin
from advisor.cost.batches import distinct, rows_of
from advisor.cost.features import Features
from advisor.cost.step_collectives import Comm, collectives_time
from advisor.cost.terms import Terms
from advisor.hardware import HardwareProfile

if TYPE_CHECKING:
    from advisor.hardware.cluster import Cluster

BREAKDOWN = ("weights", "kv", "compute", "comm", "overhead")
SHARED_STREAM_TOKENS = 256  # vLLM's VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD default (`vllm/envs.py`)
# Seconds per logit of vLLM's PyTorch top-k/top-p path (`v1/sample/ops/topk_topp_sampler.py: apply_top_k_top_p`
# to v0.16: sort every row's logits, softmax, cumsum, scatter back): vLLM PR #32234 timed it at 57.6 ms for
# 2,048 rows x 131,072 logits and 115.1 ms at 262,144 (0.215 ns a logit, linear in the logits); PR #33538's
# table, 0.31-0.32 ns at 48-56 rows of 32,768. One figure for every GPU (a segmented sort, not a bandwidth bound).
SORT_SAMPLER_S_PER_LOGIT = 0.215e-9


# One node's collective timers per (profile, engine), their placements and terms resolved at first use: a sweep and
# every prediction on the profile reuse them (the profile object itself is kept, so its id is not reused)
_COMMS: dict[tuple[int, str], tuple[HardwareProfile, Comm]] = {}


def comm_fn(hw: HardwareProfile, engine: str, cluster: Cluster | None = None) -> Comm:
    """Collective time on the profile's measured terms; TensorRT-LLM's allreduce by its own one-/two-shot
    kernels at the NVLink's rate (`hardware/comm.py: trtllm_allreduce_timer`), its other collectives as vLLM's.
    On a multi-node `cluster`, groups that span fast domains are timed across the fabric (`cost/cluster_comm.py`)."""
    from advisor.hardware.comm import collective_timer, trtllm_allreduce_timer

    if cluster is not None and cluster.multi_node:
        from advisor.cost.cluster_comm import cluster_comm_fn

        return cluster_comm_fn(cluster, engine, comm_fn(hw, engine))

    last = _COMMS.get((id(hw), engine))
    if last is not None and last[0] is hw:
        return last[1]
    physics = "vllm" if engine == "trtllm" else engine
    timers: dict[tuple[str, int], Callable[[np.ndarray], np.ndarray]] = {}
    wide: list[Comm] = []  # the wide-EP timer on this one node, built at the first expert all-to-all

    def f(op: str, nbytes: np.ndarray, n: int, domains: int = 1, backend: str | None = None,
          moe: tuple[int, int, int] | None = None) -> np.ndarray:
        if op in ("dispatch", "combine"):  # DeepEP's all-to-all inside the node (`Settings.moe_a2a_backend`)
            if not wide:
                from advisor.cost.cluster_comm import cluster_comm_fn
                from advisor.hardware.cluster import load_cluster

                wide.append(cluster_comm_fn(load_cluster(hw), engine, f))
            return wide[0](op, nbytes, n, domains, backend, moe)
        if (op, n) not in timers:  # placement and terms resolved once per (op, group size)
            timers[op, n] = trtllm_allreduce_timer(hw, n) if (engine, op) == ("trtllm", "allreduce") \
                else collective_timer(hw, op, n, engine=physics)
        return timers[op, n](nbytes) * 1e-6

    if len(_COMMS) >= 16:  # profiles loaded and dropped (a test's copies): keep the newest few
        _COMMS.pop(next(iter(_COMMS)))
    _COMMS[id(hw), engine] = (hw, f)
    return f


def pad_tokens(t: np.ndarray, graph_max: np.ndarray | float) -> np.ndarray:
    """CUDA-graph padding: capture sizes [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)
    (`vllm/config/vllm.py:_set_cudagraph_sizes`); none above the largest captured batch `graph_max` (the
    resolved engine's, `Features.graph_max`: bigger batches run eagerly, unpadded)."""
    t = np.maximum(t, 1.0)
    grain = 8.0 + 8.0 * (t >= 256)  # the sizes' step: 8 below 256, 16 from there
    padded = np.ceil(t / grain) * grain
    padded -= (t <= 4) * (4.0 + 2.0 * (t <= 2) + (t <= 1))  # up to 4 tokens the next power of two: 8 - 4, 6 or 7
    return np.where(t > graph_max, t, padded)


def step_time(F: Features, hw: HardwareProfile, terms: Terms, comm: Comm, dec: np.ndarray, ctx: np.ndarray,
              pre: np.ndarray, ctx_pre: np.ndarray, sampled: np.ndarray, q: np.ndarray | float = 1.0
              ) -> dict[str, np.ndarray]:
    """Seconds of one step per DP rank, split into the breakdown terms (plus `total`), and the same total by
    mechanism (`mech_gemm`, `mech_moe`, `mech_attention`, `mech_collectives`, `mech_sampler`, `mech_fixed`).
    Arrays broadcast against the features ([P] or [P, 1, 1])."""
    bw = hw.gpu.mem_bw_bytes_per_s * terms.bw_scale
    peak16 = hw.gpu.dense_flops_per_s("bf16")
    tokens = pad_tokens(dec * q + pre, F.graph_max)  # q: positions per decoding sequence (k + 1 when verifying drafts)
    batch = _per_batch(F, bw, comm, tokens, sampled)
    kv, attn_fixed = _shared_decode_attention(F, bw, peak16, dec, ctx, q)
    pre_w, pre_c, pre_fixed = _prefill_attention(F, bw, peak16, pre, ctx_pre, hw.gpu.dense_flops_per_s("fp8"))
    gdn_w, gdn_c, gdn_fixed = _gdn(F, bw, peak16, dec, pre, ctx_pre)
    attn_fixed = attn_fixed + pre_fixed + gdn_fixed
    # 0 unless the release sorts for a top-p; skipped outright on the sweep's grid, where no plan does
    sampler = sampled * F.sort_elems * SORT_SAMPLER_S_PER_LOGIT if np.any(F.sort_elems) else 0.0
    compute = batch["compute"] + pre_c + gdn_c + sampler
    comm_t = batch["comm"] * terms.comm_latency_scale
    overhead = (batch["fixed"] + attn_fixed) * 1e-6 + F.layers * terms.layer_overhead_us * 1e-6 \
        + terms.step_overhead_us * 1e-6
    parts = {"weights": batch["weights"], "kv": kv + pre_w + gdn_w + dec * F.state_step_bytes / bw,
             "compute": compute, "comm": comm_t, "overhead": overhead}
    shape = np.broadcast_shapes(*(np.shape(v) for v in parts.values()))
    out = {k: np.broadcast_to(v, shape) for k, v in parts.items()}
    out["total"] = sum(out.values())  # type: ignore[assignment]
    # the same time by mechanism (what `explain` and the case study report): each kernel chain with its
    # fixed latency, the collectives, and the step-level fixed time
    attention = parts["kv"] + attn_fixed * 1e-6 + pre_c + gdn_c
    mech = {"gemm": batch["gemm"], "moe": batch["moe"], "attention": attention, "collectives": comm_t,
            "sampler": sampler, "fixed": F.layers * terms.layer_overhead_us * 1e-6 + terms.step_overhead_us * 1e-6}
    out.update({f"mech_{k}": np.broadcast_to(v, shape) for k, v in mech.items()})
    if np.any(F.tbo > 0):  # SGLang's two-batch overlap (`cost/tbo.py`)
        from advisor.cost.tbo import tbo_step

        off = replace(F, tbo=np.zeros_like(F.tbo))
        return tbo_step(F, hw, out, lambda G: step_time(G, hw, terms, comm, dec / 2, ctx, pre / 2, ctx_pre,
                                                        np.maximum(sampled / 2, 1), q),
                        lambda t, slots: collectives_time(off, comm, t, sampled, only=slots) * terms.comm_latency_scale,
                        tokens, pre)
    return out


def _per_batch(F: Features, bw: float, comm: Comm, tokens: np.ndarray, sampled: np.ndarray) -> dict[str, np.ndarray]:
    """The terms a plan's padded batch sets: the dense and MoE weight streams (`weights`), their compute excess
    (`compute`), fixed microseconds (`fixed`) and mechanisms (`gemm`, `moe`), and the collectives (`comm`, before
    `Terms.comm_latency_scale`); costed once per distinct (plan, padded tokens) when the grid repeats them
    (`cost/batches.py`)."""
    batches = distinct(tokens, np.shape(F.tp))
    at = tokens if batches is None else batches.values
    parts_w, parts_c, fixed = _gemms(F, bw, at)
    moe_w, moe_c, moe_fixed = _moe(F, bw, at * F.dp)
    terms = {"weights": parts_w + moe_w, "compute": parts_c + moe_c, "fixed": fixed + moe_fixed,
             "gemm": parts_w + parts_c + fixed * 1e-6, "moe": moe_w + moe_c + moe_fixed * 1e-6}
    if batches is not None:
        terms = {k: batches.spread(v) for k, v in terms.items()}
    return {**terms, "comm": collectives_time(F, comm, tokens, sampled, batches=batches)}


def _split(tw: np.ndarray, tc: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """A p-norm of memory and compute time as (memory part, the compute excess over it)."""
    return tw, kernels.pnorm(tw, tc, p) - tw


def _gemms(F: Features, bw: float, tokens: np.ndarray) -> tuple[np.ndarray, ...]:
    """Dense GEMMs of the step: (memory seconds, compute-excess seconds, fixed microseconds: their launches and
    the unfused input quantizations')."""
    P = kernels.params()["gemm"]
    # weights once, BF16 activations in and out of every call ([T, ~H/tp] each way)
    # the shared experts run on a second stream beside the routed ones up to a batch (vLLM `fused_moe/runner/
    # shared_experts.py: should_run_shared_in_aux_stream`, VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD 256; SGLang
    # `deepseek_v2.py: forward_normal_dual_stream`, 1024; TensorRT-LLM `multi_stream_utils.py:
    # maybe_execute_in_parallel`), hidden by the longer routed chain
    hide = tokens <= SHARED_STREAM_TOKENS
    calls = F.gemm_calls - hide * F.shared_calls
    tw = (F.dense_w_bytes - hide * F.shared_w_bytes + 4 * tokens * F.hidden * calls / F.tp) / (bw * F.gemm_e_bw)
    tc = tokens * (F.dense_gemm_s - hide * F.shared_gemm_s) / F.gemm_e_f
    w, c = _split(tw, tc, P["p"])
    return w, c, calls * kernels.gemm_step_t0_us() + F.quant_us


def touched_experts(experts: np.ndarray, topk: np.ndarray, ep: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Distinct experts one GPU reads per MoE layer: E / EP (1 - (1 - k/E)^T), uniform routing (vLLM
    `fused_moe.py` reads every expert that any of the T tokens picks)."""
    e = np.maximum(experts, 1)
    return e / ep * -np.expm1(tokens * np.log1p(-topk / e))  # 1 - (1 - k/E)^T, its log per plan


def busiest_rank_pairs(topk: np.ndarray, ep: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """(token, expert) pairs on the busiest of EP ranks: mean T k / EP plus sqrt(2 mean ln EP), the expected
    maximum of EP Poisson loads (static expert placement, EPLB off)."""
    mean = tokens * topk / ep
    return mean + np.sqrt(2 * mean * np.log(np.maximum(ep, 1)))


def _moe(F: Features, bw: float, tokens: np.ndarray) -> tuple[np.ndarray, ...]:
    """The MoE layers on the busiest GPU: (memory seconds, compute-excess seconds, fixed microseconds); the plans
    with INT4 experts by Marlin's blocks, dequantization and mma.sync instead (`cost/marlin.py`), computed on those
    plans only."""
    P = kernels.params()["moe"]
    n_act = touched_experts(F.experts, F.topk, F.ep, tokens)
    pairs = busiest_rank_pairs(F.topk, F.ep, tokens)
    w_expert = F.moe_mats * F.moe_hidden * F.moe_inter * F.moe_b_w
    slim = F.moe_inter / (F.moe_inter + P["I_h"])
    tw = (n_act * w_expert / (F.moe_e_bw * slim) + pairs * F.moe_hidden * P["a_act_B"]) / bw \
        + (F.moe_hidden + F.moe_inter) * F.moe_b_w * F.moe_kappa * 1e-9
    tc = (pairs + n_act * P["m_h"]) * 2 * F.moe_mats * F.moe_hidden * F.moe_inter / (F.moe_peak * F.moe_e_f)
    w, c = _split(tw, tc, P["p"])
    rows = np.flatnonzero(np.ravel(F.moe_marlin > 0))
    if rows.size:  # the Marlin plans' rows written over the fused-MoE model's
        shape = np.shape(w)
        mw, mc = _marlin_moe(bw, *(rows_of(a, rows, shape) for a in (
            tokens, n_act, pairs, F.topk, F.ep, F.experts, F.moe_hidden, F.moe_inter, F.moe_mats, F.moe_b_w,
            F.moe_peak, F.moe_fpc, F.moe_mma)))
        w[rows], c[rows] = mw, mc  # w, c: this function's own arrays
    return F.moe_layers * w, F.moe_layers * c, F.moe_layers * F.moe_t0_us


def _marlin_moe(bw: float, tokens: np.ndarray, n_act: np.ndarray, pairs: np.ndarray, topk: np.ndarray,
                ep: np.ndarray, experts: np.ndarray, *expert: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One Marlin MoE layer on the busiest GPU beyond its t0: (DRAM seconds, excess seconds), its M-blocks from the
    step's tokens (`marlin.block_m`, `marlin.blocks`); `expert`: hidden, inter, mats, b_w, peak, fpc, mma
    (`Features.moe_*`)."""
    f = marlin.marlin_params()
    hidden, inter, mats, b_w, peak, fpc, mma = expert
    bm = marlin.block_m(tokens * topk * ep / np.maximum(experts, 1))
    nblk = marlin.blocks(n_act, pairs, bm)
    return marlin.split(f, n_act, pairs, nblk, bm, hidden, inter, mats, b_w, bw, peak, fpc, mma, f["p"])


def _on_plans(mask: np.ndarray, shape: tuple[int, ...], fn: Callable[..., np.ndarray],
              *arrays: np.ndarray | float) -> np.ndarray:
    """`fn(*arrays)` evaluated on the plans (leading axis) where `mask` holds, zeros on the others: a stacked
    sweep mixes model kinds, and each kernel model runs on the plans that have its layers only."""
    rows = np.flatnonzero(np.ravel(mask))
    out = np.zeros(shape)
    if rows.size:
        out[rows] = fn(*(rows_of(a, rows, shape) for a in arrays))
    return out


_LAST_DECODE: list[tuple[object, ...]] = []  # the last step's decode attention: (its inputs, its result)


def _shared_decode_attention(F: Features, bw: float, peak: float, dec: np.ndarray, ctx: np.ndarray,
                             q: np.ndarray | float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """`_decode_attention`, reused when the step before ran the same decodes on the same features (a mixed
    scheduler's step with a prompt chunk and the one without, `serving._mixed`): the inputs compared bit for bit."""
    key = (bw, peak, *(_bits(a) for a in (q, dec, ctx)))
    last = _LAST_DECODE[0] if _LAST_DECODE else None
    if last is not None and last[0] is F and last[1] == key:
        return last[2]  # type: ignore[return-value]
    val = _decode_attention(F, bw, peak, dec, ctx, q)
    _LAST_DECODE[:] = [(F, key, val)]
    return val


def _bits(a: np.ndarray | float) -> tuple[tuple[int, ...], str, bytes]:
    """An array's shape, dtype and bytes: equal exactly when the values are bit for bit."""
    a = np.asarray(a)
    return a.shape, a.dtype.str, a.tobytes()


def _decode_attention(F: Features, bw: float, peak: float, dec: np.ndarray,
                      ctx: np.ndarray, q: np.ndarray | float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Decode attention of `dec` sequences with q query positions each (KV read once, q x the FLOPs): (seconds
    beyond the fixed latency, fixed microseconds).
    Without the per-context term (rho 0 in a step) a kernel's memory and FLOP times are both proportional to
    sequences x context, and its p-norm is homogeneous: the time is d x c x the kernel's time at d = c = 1
    (`_attention_per_token_us`), whose powers are taken once per plan instead of at every grid point."""
    per = _attention_per_token_us(F, bw, peak, q)
    full_ctx = np.minimum(ctx, np.where(F.index_topk > 0, F.index_topk, np.inf))  # DSA attends to its top-k
    win_ctx = np.minimum(ctx, np.where(F.window > 0, F.window, np.inf))
    # DSA: the indexer chain's pass over the whole context (`kernels.dsa_indexer_us`; index_bytes is 0 without
    # DSA), its t0 with the fixed latencies
    indexer = kernels.dsa_indexer_us({**kernels.dsa_params(), "t0_us": 0.0}, 1.0, 1.0, F.index_bytes, bw)
    us = dec * (F.attn_layers * (full_ctx * per["full"] + ctx * indexer) + F.win_layers * win_ctx * per["win"])
    fixed = ((F.attn_layers + F.win_layers) * F.attn_t0_us + dsa_fixed_us(F)) * (dec > 0)
    return us * 1e-6, fixed


def _attention_per_token_us(F: Features, bw: float, peak: float, q: np.ndarray | float) -> dict[str, np.ndarray]:
    """Per plan, one decode sequence's attention microseconds per context token beyond the fixed latency: `full`
    (GQA or MLA by the plan's layers, `kernels.attention_decode_us` / `kernels.mla_decode_us`) and `win` (its
    windowed layers)."""
    P = kernels.params()["attention"]
    shape = np.broadcast_shapes(np.shape(q), np.shape(F.attn_layers))

    def gqa(e_bw: np.ndarray, e_f: np.ndarray, b_kv: np.ndarray, h: np.ndarray, g: np.ndarray,
            hd: np.ndarray) -> np.ndarray:
        f = {"t0_us": 0.0, "e_bw": e_bw, "e_f": e_f, "rho_ns_per_B": 0.0}
        return kernels.attention_decode_us(f, b_kv, 1.0, 1.0, h, g, hd, bw, peak, P)

    def mla(e_bw: np.ndarray, e_f: np.ndarray, b_kv: np.ndarray, h: np.ndarray, latent: np.ndarray,
            rope: np.ndarray) -> np.ndarray:
        return kernels.mla_decode_us({"e_bw": e_bw, "e_f": e_f}, b_kv, 1.0, 1.0, h, latent, rope, bw, peak)

    common = (F.attn_e_bw, F.attn_e_f, F.b_kv)
    full = _on_plans((F.attn_mla == 0) & (F.attn_layers > 0), shape, gqa, *common, F.attn_heads * q,
                     F.attn_kv_heads, F.attn_head_dim) \
        + _on_plans(F.attn_mla > 0, shape, mla, *common, F.attn_heads * q, F.mla_latent, F.mla_rope)
    win = _on_plans(F.win_layers > 0, shape, gqa, *common, F.win_heads * q, F.win_kv_heads, F.win_head_dim)
    return {"full": full, "win": win}


def dsa_fixed_us(F: Features) -> np.ndarray:
    """Fixed microseconds of the DSA indexer chain per step that runs it (`kernels.dsa_params`), every DSA layer."""
    return np.where(F.index_topk > 0, F.attn_layers * kernels.dsa_params()["t0_us"], 0.0)


def _prefill_attention(F: Features, bw: float, peak: float, pre: np.ndarray, ctx_pre: np.ndarray,
                       peak8: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prefill attention of `pre` prompt tokens of mean context `ctx_pre`, every layer
    (`kernels.attention_prefill_us`; windowed layers see at most the window): (memory seconds, compute-excess
    seconds, fixed microseconds). DSA: each query attends to its top-k tokens only, after the indexer's FP8
    logits over its whole context (vLLM `sparse_attn_indexer.py`: `fp8_mqa_logits`, 2 x heads x dim FLOPs per
    pair, no table of its own: the prefill attention's efficiency at the FP8 rate `peak8`, the BF16 one on a GPU
    without FP8)."""
    if not np.any(pre):  # a decode-only step
        return np.zeros(()), np.zeros(()), np.zeros(())
    ctx_win = np.minimum(ctx_pre, np.where(F.window > 0, F.window, ctx_pre))
    # mean over a prompt of I = 2 ctx_pre tokens of min(position, k): I / 2 up to k, k - k^2 / 2I beyond
    k = np.maximum(F.index_topk, 1.0)
    ctx_full = np.where((F.index_topk > 0) & (2 * ctx_pre > k), k - k * k / (4 * ctx_pre), ctx_pre)
    # both times are proportional to the prompt tokens and the p-norm is homogeneous: its powers per token
    # (`_decode_attention`), at the contexts' shape rather than the step's grid
    tc = (ctx_full * F.attn_full_flops + ctx_win * F.attn_win_flops) / (peak * F.pre_e_f) \
        + ctx_pre * F.index_flops / (peak8 * F.pre_e_f)
    tw = F.pre_bytes / (bw * F.pre_e_bw)
    w, c = _split(tw, tc, kernels.params()["prefill"]["p"])
    return pre * w, pre * c, ((F.attn_layers + F.win_layers) * F.pre_t0_us + dsa_fixed_us(F)) * (pre > 0)


def _gdn(F: Features, bw: float, peak: float, dec: np.ndarray, pre: np.ndarray,
         ctx_pre: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gated DeltaNet layers (`kernels.gdn_decode_us`, `kernels.gdn_prefill_us`): the decode state traffic, the
    prefill chunk's compute (its prompts of up to 2 ctx_pre tokens each), their fixed latency per call:
    (memory seconds, compute seconds, fixed microseconds)."""
    G = kernels.gdn_params()
    d, f = G["decode"], G["prefill"]
    shape = np.broadcast_shapes(np.shape(dec), np.shape(pre), np.shape(ctx_pre), np.shape(F.gdn_layers))
    has = F.gdn_layers > 0
    geometry = (F.gdn_layers, F.gdn_heads, F.gdn_dk, F.gdn_dv)

    def mem(n: np.ndarray, h: np.ndarray, dk: np.ndarray, dv: np.ndarray, b: np.ndarray) -> np.ndarray:
        return n * (kernels.gdn_decode_us(d, b, h, dk, dv, bw) - d["t0_us"])

    def comp(n: np.ndarray, h: np.ndarray, dk: np.ndarray, dv: np.ndarray, p: np.ndarray,
             c: np.ndarray) -> np.ndarray:
        seq = np.maximum(np.minimum(p, 2 * c), 1.0)
        return n * (kernels.gdn_prefill_us(f, p / seq, seq, h, dk, dv, peak, f["p"]) - f["t0_us"]) * (p > 0)

    memory = _on_plans(has, shape, mem, *geometry, dec)
    compute = _on_plans(has, shape, comp, *geometry, pre, ctx_pre) if np.any(pre) else np.zeros(())
    fixed = F.gdn_layers * (d["t0_us"] * (dec > 0) + f["t0_us"] * (pre > 0))
    return memory * 1e-6, compute * 1e-6, fixed
