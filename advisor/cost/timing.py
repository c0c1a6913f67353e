"""Step time, TTFT, TPOT and throughput: one numpy evaluation over plans x concurrency x lengths.

Decode step (per DP rank, B running sequences, mean context c):
    t = max(W / (bw*e_bw), F_gemm / e_flops) + max(KV / (bw*e_bw), F_attn / e_flops)
        + comm + L * layer_overhead + step_overhead
W counts only the experts the batch touches: E_local * (1 - (1 - k/E)^B) per MoE layer (vLLM
`fused_moe/fused_moe.py`: experts with no tokens are skipped).
Prefill is the same roofline over chunks of max_num_batched_tokens (vLLM chunked prefill), compute-bound
for real prompts; other requests' prefill chunks slow the decode steps they share (see `serve`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from advisor.cost.collectives import SLOTS
from advisor.cost.features import Features
from advisor.cost.terms import Terms
from advisor.hardware import HardwareProfile

Comm = Callable[[str, np.ndarray, int], np.ndarray]  # (op, bytes, group size) -> seconds


def comm_fn(hw: HardwareProfile, engine: str) -> Comm:
    from advisor.hardware.comm import collective_time_us

    def f(op: str, nbytes: np.ndarray, n: int) -> np.ndarray:
        return collective_time_us(hw, op, nbytes, n, engine=engine) * 1e-6

    return f


def _by_group(comm: Comm, op: str, nbytes: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Collective time where group sizes differ per plan: one vectorised call per distinct size."""
    out = np.zeros(np.broadcast_shapes(nbytes.shape, group.shape))
    nbytes, group = np.broadcast_to(nbytes, out.shape), np.broadcast_to(group, out.shape)
    for n in np.unique(group):
        if n > 1:
            mask = group == n
            out[mask] = comm(op, nbytes[mask], int(n))
    return out


# Largest CUDA graph vLLM captures by default: min(2 * max_num_seqs, 512) (`vllm/config/vllm.py:
# _set_cudagraph_sizes`); bigger batches run eagerly, unpadded.
MAX_CAPTURE_TOKENS = 512


def pad_tokens(t: np.ndarray) -> np.ndarray:
    """CUDA-graph padding: capture sizes [1, 2, 4] + range(8, 256, 8) + range(256, 513, 16)
    (`vllm/config/vllm.py:_set_cudagraph_sizes`); none above the largest capture size."""
    t = np.maximum(t, 1.0)
    small = 2.0 ** np.ceil(np.log2(t))
    padded = np.where(t <= 4, small, np.where(t < 256, np.ceil(t / 8) * 8, np.ceil(t / 16) * 16))
    return np.where(t > MAX_CAPTURE_TOKENS, t, padded)


def forward_time(F: Features, hw: HardwareProfile, terms: Terms, comm: Comm, tokens: np.ndarray,
                 ctx: np.ndarray, decode: bool, sampled: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Seconds of one forward of `tokens` tokens per DP rank attending to `ctx` context each, split into
    the breakdown terms; `sampled` rows reach the logits (default: every token, as in decode). Arrays
    broadcast against the [P, 1, 1] features."""
    bw = hw.gpu.mem_bw_bytes_per_s * terms.mem_bw_eff
    peak_bf16 = hw.gpu.dense_flops_per_s("bf16") * terms.flops_eff
    moe_tokens = tokens * F.dp  # the MoE of a DP group sees every rank's tokens
    frac = np.where(F.experts > 0, 1 - (1 - F.topk / np.maximum(F.experts, 1)) ** moe_tokens, 0.0)
    touched = F.experts / F.ep * frac
    w_bytes = F.dense_w_bytes + F.moe_layers * touched * F.expert_bytes
    gemm = (F.dense_gemm_s * tokens + F.expert_gemm_s * moe_tokens * F.topk * F.moe_layers / F.ep) / terms.flops_eff
    t_w = w_bytes / bw
    win_ctx = np.minimum(ctx, np.where(F.window > 0, F.window, ctx))
    kv = tokens * (ctx * F.kv_full + win_ctx * F.kv_win + F.state_bytes) / (bw if decode else np.inf)
    attn = tokens * (ctx * F.attn_full_flops + win_ctx * F.attn_win_flops) / peak_bf16
    comm_t = collectives_time(F, comm, tokens, tokens if sampled is None else sampled) * terms.comm_latency_scale
    overhead = F.layers * terms.layer_overhead_us * 1e-6 + terms.step_overhead_us * 1e-6
    compute = np.maximum(gemm - t_w, 0) + np.maximum(attn - kv, 0)
    parts = {"weights": t_w, "kv": kv, "compute": compute, "comm": comm_t, "overhead": overhead}
    shape = np.broadcast_shapes(*(np.shape(v) for v in parts.values()))
    out = {k: np.broadcast_to(v, shape) for k, v in parts.items()}
    out["total"] = sum(out.values())  # type: ignore[assignment]
    return out


def collectives_time(F: Features, comm: Comm, tokens: np.ndarray, sampled: np.ndarray) -> np.ndarray:
    """Seconds of one forward's collectives (`collectives.step_collectives`, summed per slot): a message is
    CUDA-graph-padded tokens per DP rank (all DP ranks' for dispatch/combine), sampled rows, or fixed."""
    t = np.broadcast_to(pad_tokens(tokens), np.broadcast_shapes(np.shape(tokens), F.tp.shape))
    units = {"tokens": t, "dp_tokens": t * F.dp, "sampled": np.maximum(sampled, 1) + 0 * t, "fixed": 1 + 0 * t}
    total = np.zeros(t.shape)
    for k, slot in enumerate(SLOTS):
        calls = F.coll_calls[..., k]
        if not np.any(calls):
            continue
        total = total + calls * _by_group(comm, slot.op, units[slot.scales_with] * F.coll_bytes[..., k],
                                          F.coll_group[..., k])
    return total


def max_running(F: Features, seq_tokens: np.ndarray) -> np.ndarray:
    """Sequences of `seq_tokens` one DP rank can hold: KV room / KV per sequence, capped by max_num_seqs.
    KV features cover all PP stages; one GPU holds its stage's share."""
    win = np.minimum(seq_tokens, np.where(F.window > 0, F.window, seq_tokens))
    per_seq = (F.kv_full * seq_tokens + F.kv_win * win + F.state_bytes) / F.pp
    fit = np.floor(F.kv_room / np.maximum(per_seq, 1e-9))
    return np.minimum(fit, F.num_seqs)


def serve(F: Features, hw: HardwareProfile, terms: Terms, comm: Comm, concurrency: np.ndarray,
          input_len: np.ndarray, output_len: np.ndarray, batched_tokens: int) -> dict[str, np.ndarray]:
    """TTFT, TPOT, tok/s for `concurrency` closed-loop users with fixed lengths, shapes [P, C, L].

    Steady state with chunked prefill (vLLM V1 default): a request's prompt is prefilled in chunks of
    max_num_batched_tokens mixed into the running decode steps. With n running requests each doing one
    prefill p1 per lifetime T = p1 + (O - 1) t_dec, the others' prefills occupy a share
    rho = (n - 1) p1 / T of the time, so
        TPOT = t_dec (1 + rho),  TTFT = p1 (1 + rho) + t_dec / 2,  tok/s = n O / (TTFT + (O - 1) TPOT)
    (Little's law); requests beyond the KV capacity queue for a whole lifetime per round."""
    users = np.ceil(concurrency / F.dp)
    running = np.maximum(np.minimum(users, max_running(F, input_len + output_len)), 1.0)
    micro = np.maximum(running / F.pp, 1.0)  # PP keeps up to pp micro-batches in flight
    step = forward_time(F, hw, terms, comm, micro, input_len + output_len / 2, decode=True)
    t_dec = step["total"]
    chunk = np.minimum(input_len, batched_tokens)
    pre = forward_time(F, hw, terms, comm, chunk, input_len / 2, decode=False, sampled=np.ones_like(chunk))
    p1 = np.maximum(input_len / batched_tokens, 1.0) * pre["total"]
    decode_s = np.maximum(output_len - 1, 0) * t_dec
    rho = (running - 1) * p1 / (p1 + decode_s)
    tpot = t_dec * (1 + rho)
    wait = terms.prefill_queue_frac * (running - 1) / 2 * p1
    ttft_run = p1 * (1 + rho) + wait + t_dec / 2 + terms.request_overhead_us * 1e-6
    lifetime = ttft_run + np.maximum(output_len - 1, 0) * tpot
    queued = np.maximum(users / running - 1, 0)
    active = np.minimum(concurrency, F.dp * running)  # idle DP ranks run dummy forwards, serve no one
    return {"ttft_s": ttft_run + queued * lifetime, "tpot_s": tpot, "output_tok_s": active * output_len / lifetime,
            "per_user_tok_s": 1 / tpot, "running": np.broadcast_to(active, tpot.shape),
            "prefill_interference_s": t_dec * rho, **{f"step_{k}": v for k, v in step.items()},
            "prefill_s": np.broadcast_to(p1, tpot.shape)}
