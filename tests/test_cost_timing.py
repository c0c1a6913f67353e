"""Step time, TTFT, TPOT and throughput (advisor/cost/timing.py, predict.evaluate): pure functions checked
against hand computation from config.json and spec-sheet numbers, and the behaviour the physics demands
(vLLM `RowParallelLinear` padding, §7 touched experts). Uncalibrated priors (Terms())."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import catalog_arch

from advisor.cost import kernels
from advisor.cost.features import Features, plan_features
from advisor.cost.plan import Plan
from advisor.cost.serving import (
    RunOptions,
    adp_balance_wait_steps,
    batch_wait_steps,
    kv_capacity,
    scheduler,
    serve,
    wave_share,
)
from advisor.cost.step import busiest_rank_pairs, comm_fn, pad_tokens, step_time, touched_experts
from advisor.cost.sweep import Case, evaluate, make_case
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile
from scripts import closed_loop

KIMI = "moonshotai/Kimi-K2.5"
KIMI_NVFP4 = "nvidia/Kimi-K2.5-NVFP4"
MINIMAX = "MiniMaxAI/MiniMax-M2.5"
LLAMA8 = "meta-llama/Llama-3.1-8B"
LLAMA70 = "meta-llama/Llama-3.1-70B"
TERMS = Terms()

arch = catalog_arch


def case(model: str, plan: Plan, hw: HardwareProfile) -> Case:
    c = make_case(arch(model), plan, hw, Settings())
    assert c.runs, c.reason
    return c


def feats(model: str, plan: Plan, hw: HardwareProfile) -> Features:
    c = case(model, plan, hw)
    assert c.memory is not None
    return Features.stack([plan_features(c.arch, plan, hw, c.args, c.weights, c.memory)])


def step(F: Features, hw: HardwareProfile, tokens: float, ctx: float = 0.0, decode: bool = True,
         terms: Terms = TERMS, sampled: float | None = None) -> dict[str, np.ndarray]:
    t, z = np.array([float(tokens)]), np.array([0.0])
    rows = t if sampled is None else np.array([float(sampled)])
    c = np.array([float(ctx)])
    dec, pre = (t, z) if decode else (z, t)
    return step_time(F, hw, terms, comm_fn(hw, "vllm"), dec, c, pre, c, rows)


def run(model: str, plan: Plan, hw: HardwareProfile, conc: list[int], lengths: list[tuple[int, int]]
        ) -> dict[str, Any]:
    c = case(model, plan, hw)
    i, o = zip(*lengths, strict=True)
    out = evaluate([c], TERMS, np.array(conc), np.array(i), np.array(o)).out
    return {k: v[0] for k, v in out.items()}


# --- CUDA-graph padding (vllm/config/vllm.py:_set_cudagraph_sizes) -------------------------------------


@pytest.mark.parametrize("tokens,padded", [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (8, 8), (9, 16), (17, 24),
                                           (255, 256), (256, 256), (257, 272), (300, 304)])
def test_pad_tokens(tokens: int, padded: int) -> None:
    assert pad_tokens(np.array([float(tokens)]), 512)[0] == padded
    assert pad_tokens(np.array([float(tokens)]), 0)[0] == tokens  # no graphs (eager): never padded


def test_padding_stops_at_the_largest_capture_size() -> None:
    # vLLM captures up to min(2 max_num_seqs, 512) (1024 on data-center Blackwell from v0.30): beyond it, eager
    assert pad_tokens(np.array([513.0, 1000.0]), 512).tolist() == [513.0, 1000.0]
    assert pad_tokens(np.array([513.0, 1000.0]), 1024).tolist() == [528.0, 1008.0]


# --- decode roofline terms ---------------------------------------------------------------------------


def test_spec_bandwidth(hw: HardwareProfile) -> None:
    # 1.792 TB/s (AIConfigurator rtx_pro_6000_server.yaml, hwprofiles/rtx-pro-6000-server.toml)
    assert hw.gpu.mem_bw_bytes_per_s == pytest.approx(1.792e12)


def test_dense_weights_term_at_batch_one(hw: HardwareProfile, configs_dir: Path) -> None:
    c = json.loads((configs_dir / "meta-llama--Llama-3.1-8B.json").read_text())
    H, L, inter, V = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    nh, kv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = H // nh
    read = 2 * (L * (H * (nh + 2 * kv) * hd + nh * hd * H) + L * 3 * H * inter + (2 * L + 1) * H + V * H)
    F = feats(LLAMA8, Plan(tp=1), hw)
    got = step(F, hw, 1)
    # weights once + BF16 activations in and out of every GEMM call, at the BF16 GEMM kernel's fitted bandwidth
    e_bw = kernels.gemm_params("bf16", native_fp4=True)["e_bw"]
    assert got["weights"][0] == pytest.approx((read + 4 * H * F.gemm_calls[0]) / (1.792e12 * e_bw), rel=1e-3)
    # 16 GB of BF16 weights at ~1.5 TB/s: ~10-11 ms per token, the rest of the step is small at B=1
    assert 0.009 < got["weights"][0] < 0.012
    assert got["comm"][0] == 0


def test_touched_experts_at_batch_one_is_top_k(hw: HardwareProfile) -> None:
    F = feats(KIMI, Plan(tp=8), hw)
    assert touched_experts(F.experts, F.topk, F.ep, np.array([1.0]))[0] == pytest.approx(8)


def test_touched_experts_approach_all_at_large_batch(hw: HardwareProfile) -> None:
    F = feats(KIMI, Plan(tp=8), hw)
    series = touched_experts(F.experts, F.topk, F.ep, np.array([1.0, 4, 16, 64, 256, 4096]))
    assert 383 < series[-1] <= 384
    assert np.all(np.diff(series) > 0)


@pytest.mark.parametrize("model,plan,batch,expected", [
    (MINIMAX, Plan(tp=4), 8, 57.4), (MINIMAX, Plan(tp=4), 32, 163), (KIMI, Plan(tp=8), 8, 59.5),
    (KIMI, Plan(tp=8), 128, 358),
])
def test_touched_experts_match_formulas_table(hw: HardwareProfile, model: str, plan: Plan, batch: int,
                                              expected: float) -> None:
    # vLLM `fused_moe.py` (uniform routing): E=256,k=8 and E=384,k=8: E (1 - (1 - k/E)^B) by hand
    F = feats(model, plan, hw)
    assert touched_experts(F.experts, F.topk, F.ep, np.array([float(batch)]))[0] == pytest.approx(expected,
                                                                                                   rel=0.005)


def test_ep_reads_local_experts_only(hw: HardwareProfile) -> None:
    # EP8: each GPU holds 32 of MiniMax's 256 experts; at B=1 it reads 8/8 = 1 of them on average
    F = feats(MINIMAX, Plan(tp=8, ep=8), hw)
    assert touched_experts(F.experts, F.topk, F.ep, np.array([1.0]))[0] == pytest.approx(1.0)


def test_busiest_ep_rank_carries_more_than_the_mean() -> None:
    # 64 tokens x top-8 over EP 8: mean 64 pairs per rank; the busiest rank's expected excess sqrt(2 x 64 x ln 8)
    got = busiest_rank_pairs(np.array([8.0]), np.array([8.0]), np.array([64.0]))[0]
    assert got == pytest.approx(64 + np.sqrt(2 * 64 * np.log(8)))
    assert busiest_rank_pairs(np.array([8.0]), np.array([1.0]), np.array([64.0]))[0] == 512  # no EP: no excess


def test_comm_is_zero_without_parallelism(hw: HardwareProfile) -> None:
    for tokens in (1, 64, 4096):
        assert step(feats(LLAMA8, Plan(tp=1), hw), hw, tokens)["comm"][0] == 0


def test_comm_per_step_matches_call_floor(hw: HardwareProfile) -> None:
    # vLLM `CustomAllreduce` 123-187 NCCL calls per step at tens of us each on PCIe -> several ms per token
    kimi = step(feats(KIMI, Plan(tp=8), hw), hw, 1)["comm"][0]
    minimax = step(feats(MINIMAX, Plan(tp=4), hw), hw, 1)["comm"][0]
    assert 0.002 < minimax < 0.010 and 0.002 < kimi < 0.010


def test_breakdown_sums_to_total(hw: HardwareProfile) -> None:
    got = step(feats(KIMI, Plan(tp=8), hw), hw, 32, ctx=2048)
    parts = sum(float(got[k][0]) for k in ("weights", "kv", "compute", "comm", "overhead"))
    assert got["total"][0] == pytest.approx(parts)
    assert all(got[k][0] >= 0 for k in got)


def test_higher_bandwidth_efficiency_is_faster(hw: HardwareProfile) -> None:
    F = feats(LLAMA70, Plan(tp=4), hw)
    slow = step(F, hw, 1, 1024, terms=Terms(bw_scale=0.6))["total"][0]
    fast = step(F, hw, 1, 1024, terms=Terms(bw_scale=1.2))["total"][0]
    assert fast < slow


def test_prefill_is_compute_bound(hw: HardwareProfile) -> None:
    got = step(feats(LLAMA8, Plan(tp=1), hw), hw, 8192, ctx=4096, decode=False)
    assert got["compute"][0] > got["weights"][0]
    # no KV cache is read; the attention's own Q, K, V, O traffic (32 layers x 20 KB per token) is small
    assert 0 < got["kv"][0] < 0.05 * got["compute"][0]


def test_prefill_logits_gather_is_one_row_per_request(hw: HardwareProfile) -> None:
    # vLLM `LogitsProcessor._gather_logits`: the logits all-gather moves T_sampled rows (1 per request in
    # prefill), not every prompt token. A single 8192-token prompt's chunk must cost (almost) the same
    # whatever the vocab.
    F = feats(KIMI, Plan(tp=8), hw)
    small_vocab = Features(**{**vars(F), "vocab": np.ones_like(F.vocab)})
    # one request in the chunk -> one sampled row (serve() passes chunk / input_len rows)
    real = step(F, hw, 8192, ctx=4096, decode=False, sampled=1)["comm"][0]
    tiny = step(small_vocab, hw, 8192, ctx=4096, decode=False, sampled=1)["comm"][0]
    gather_one_row = comm_fn(hw, "vllm")("allgather", np.array([F.vocab[0] * 2]), 8)[0]
    assert real - tiny <= 2 * gather_one_row


# --- serving behaviour -------------------------------------------------------------------------------

CONC = [1, 2, 4, 8, 16, 32, 64, 128]


def test_tpot_grows_with_concurrency(hw: HardwareProfile) -> None:
    for model, plan in ((KIMI, Plan(tp=8)), (MINIMAX, Plan(tp=4)), (LLAMA70, Plan(tp=4))):
        tpot = run(model, plan, hw, CONC, [(1024, 1024)])["tpot_s"][:, 0]
        assert np.all(np.diff(tpot) >= 0), model
        assert tpot[-1] > 1.5 * tpot[0], model


def test_throughput_grows_until_kv_capacity(hw: HardwareProfile) -> None:
    # Llama-3.1-70B TP2 holds only a few 33k-token sequences: throughput rises, then stays at the cap
    conc = [1, 2, 4, 8, 16, 32, 64]
    got = run(LLAMA70, Plan(tp=2), hw, conc, [(32768, 1024)])
    running, tok_s = got["running"][:, 0], got["output_tok_s"][:, 0]
    F = feats(LLAMA70, Plan(tp=2), hw)
    cap = float(kv_capacity(F, np.array([32768 + 1024 / 2]))[0])
    assert 1 <= cap < 16
    assert np.all(running <= cap)
    below = np.array(conc) <= cap
    assert np.all(np.diff(tok_s[below]) > 0)
    assert np.allclose(tok_s[~below], tok_s[~below][0])
    # queueing shows up in TTFT, not in throughput
    assert np.all(np.diff(got["ttft_s"][:, 0][~below]) > 0)


def test_throughput_grows_with_concurrency_when_kv_is_plenty(hw: HardwareProfile) -> None:
    tok_s = run(MINIMAX, Plan(tp=4), hw, CONC, [(1024, 1024)])["output_tok_s"][:, 0]
    assert np.all(np.diff(tok_s) > 0)


def test_ttft_grows_with_input_length(hw: HardwareProfile) -> None:
    lengths = [(128, 128), (1024, 128), (8192, 128), (32768, 128)]
    for model, plan in ((LLAMA8, Plan(tp=1)), (KIMI, Plan(tp=8))):
        ttft = run(model, plan, hw, [1], lengths)["ttft_s"][0]
        assert np.all(np.diff(ttft) > 0), model


def test_sweep_point_does_not_depend_on_other_points(hw: HardwareProfile) -> None:
    # A (concurrency, lengths) point must not change when longer sequences are added to the same sweep:
    # how many 2k-token sequences fit is not limited by the KV a 33k-token sequence would need.
    alone = run(LLAMA70, Plan(tp=2), hw, [64], [(1024, 1024)])
    mixed = run(LLAMA70, Plan(tp=2), hw, [64], [(1024, 1024), (32768, 1024)])
    assert mixed["output_tok_s"][0, 0] == pytest.approx(alone["output_tok_s"][0, 0], rel=1e-9)
    assert mixed["running"][0, 0] == alone["running"][0, 0]


def test_a_case_in_a_stacked_sweep_is_the_case_alone(hw: HardwareProfile) -> None:
    # the sweep computes each kernel chain and each collective only on the plans that have it (group sizes 1-8,
    # MLA / GQA / linear attention, MoE with and without EP): every case must come out as it does on its own
    cases = [case(LLAMA8, Plan(tp=1), hw), case(LLAMA70, Plan(tp=2), hw), case(MINIMAX, Plan(tp=4), hw),
             case(MINIMAX, Plan(tp=8, ep=8), hw), case(KIMI_NVFP4, Plan(tp=8), hw),
             case("nvidia/Qwen3.5-397B-A17B-NVFP4", Plan(tp=4), hw)]
    conc, inp, out = np.array([1, 16, 256]), np.array([128, 8192]), np.array([128, 1024])
    together = evaluate(cases, TERMS, conc, inp, out).out
    for j, c in enumerate(cases):
        alone = evaluate([c], TERMS, conc, inp, out).out
        for key in ("ttft_s", "tpot_s", "output_tok_s", "step_comm", "step_total"):
            np.testing.assert_allclose(together[key][j], alone[key][0], rtol=1e-12, err_msg=f"{c.arch.model} {key}")


# --- case study ordering , uncalibrated -------------------------------------------------


def test_minimax_tp4_beats_kimi_nvfp4_tp8_single_user(hw: HardwareProfile) -> None:
    # measured 11.9 ms vs 16.4 ms per token (advisor/examples/case_study.csv)
    mm = run(MINIMAX, Plan(tp=4), hw, [1], [(1024, 512)])["tpot_s"][0, 0]
    kimi = run(KIMI_NVFP4, Plan(tp=8), hw, [1], [(1024, 512)])["tpot_s"][0, 0]
    assert mm < kimi


def test_minimax_ep8_out_serves_kimi_at_128_users(hw: HardwareProfile) -> None:
    # measured ~4000 vs 1239 tok/s at 128 users (advisor/examples/case_study.csv)
    mm = run(MINIMAX, Plan(tp=8, ep=8), hw, [128], [(1024, 1024)])["output_tok_s"][0, 0]
    kimi = run(KIMI_NVFP4, Plan(tp=8), hw, [128], [(1024, 1024)])["output_tok_s"][0, 0]
    assert mm > kimi


# --- TensorRT-LLM attention-DP balance --------------------------------------------------


def _held_by_simulation(rate: float, dp: int, timeout: int, batching: int, steps: int = 200_000) -> float:
    """Step by step, as `PyExecutor._balance_adp_requests`: each rank gets Poisson(`rate`) arrivals per step; a
    counter counts the steps in which some rank has no waiting request (with or without any waiting); at
    `timeout`, or once every rank has one and `batching` more such steps passed, every waiting request is
    scheduled and the counter restarts. Mean held steps."""
    rng = np.random.default_rng(1)
    arrivals = rng.poisson(rate, size=(steps, dp))
    waiting: list[list[int]] = [[] for _ in range(dp)]
    count = batch = 0
    held: list[int] = []
    for t in range(steps):
        for m in range(dp):
            waiting[m] += [t] * int(arrivals[t, m])
        release = False
        if all(waiting):
            count = 0
            batch, release = (batch + 1, False) if batch < batching else (0, True)
        else:
            count += 1
            if count >= timeout:
                count, release = 0, True
        if release:
            held += [t - a for w in waiting for a in w]
            waiting = [[] for _ in range(dp)]
    return float(np.mean(held))


@pytest.mark.parametrize(("dp", "period", "timeout", "batching"),
                         [(2, 100, 60, 0), (4, 32, 60, 0), (8, 32, 60, 0), (8, 128, 60, 0), (8, 512, 60, 0),
                          (2, 10, 50, 10), (4, 33, 50, 10), (4, 2, 50, 10)])
def test_adp_balance_wait_matches_a_simulation(dp: int, period: int, timeout: int, batching: int) -> None:
    got = float(adp_balance_wait_steps(np.array(1 / period), np.array(dp), timeout, batching))
    # continuous time against whole steps (a request released in the step it came waits 0): up to half a step
    assert got == pytest.approx(_held_by_simulation(1 / period, dp, timeout, batching), abs=0.7)


def test_adp_balance_wait_limits() -> None:
    # some rank never has a request: half the timeout on average; one rank: nothing to balance; off: nothing held
    assert adp_balance_wait_steps(np.array([0.0, 0.5]), np.array([8, 1]), 60.0).tolist() == [30.0, 0.0]
    assert adp_balance_wait_steps(np.array(0.1), np.array(8), 0.0) == 0.0
    # arrivals so frequent that every rank has one at once: only the batching wait is left
    assert float(adp_balance_wait_steps(np.array(50.0), np.array(4), 60.0, 10.0)) == pytest.approx(5.0, abs=0.1)


def _batch_held_by_simulation(rate: float, timeout: int, short: float, prompt: float, steps: int = 60_000) -> float:
    """Step by step, as `PyExecutor._waiting_requests`: an arrival with probability `rate` per step; while
    prompts wait, they are released once `timeout` steps were counted or their tokens reach `short`; mean held."""
    rng = np.random.default_rng(2)
    waiting: list[int] = []
    count, held = 0, []
    for t in range(steps):
        if rng.random() < rate:
            waiting.append(t)
        if waiting:
            if count >= timeout or len(waiting) * prompt >= short:
                held += [t - a for a in waiting]
                waiting, count = [], 0
            else:
                count += 1
    return float(np.mean(held))


@pytest.mark.parametrize(("period", "short", "rel"), [(256, 1e9, 0.03), (64, 1e9, 0.03), (16, 1e9, 0.03),
                                                      (4, 6400.0, 0.16), (16, 3000.0, 0.16)])
def test_batch_wait_matches_a_simulation(period: int, short: float, rel: float) -> None:
    # timeout-bound as InferenceX ran Llama-3.1-70B (20 steps; 0.9 x 16384 tokens take 14 prompts), then
    # thresholds that 7 or 3 prompts fill before the timeout does
    got = float(batch_wait_steps(np.array(1 / period), 20, np.array(short), np.array(1000.0)))
    assert got == pytest.approx(_batch_held_by_simulation(1 / period, 20, short, 1000.0), rel=rel)


def test_batch_wait_limits() -> None:
    # TensorRT-LLM's default (0, 0) and a threshold one prompt fills release at once; no arrivals: the timeout
    assert batch_wait_steps(np.array(0.1), 0, np.array(7000.0), np.array(1000.0)) == 0.0
    assert batch_wait_steps(np.array(0.1), 20, np.array(0.0), np.array(1000.0)) == 0.0
    assert batch_wait_steps(np.array(0.1), 20, np.array(900.0), np.array(1000.0)) == 0.0
    assert float(batch_wait_steps(np.array(0.0), 20, np.array(7000.0), np.array(1000.0))) == pytest.approx(20.0)


def test_dsa_prefill_attends_top_k_after_the_indexer() -> None:
    """DeepSeek-V3.2 (DSA): each prompt token attends over the latent to its top-2048 tokens only, after the
    indexer's FP8 logits over its whole context (64 heads x 128, replicated on every rank)."""
    from advisor.cost.step import _prefill_attention
    from advisor.hardware import load_profile

    b200 = load_profile("b200-sxm")
    F = feats("deepseek-ai/DeepSeek-V3.2", Plan(tp=8), b200)
    assert F.index_flops[0] == 2 * 64 * 128 * 61
    assert F.attn_full_flops[0] == 2 * (128 / 8) * (576 + 512) * 61  # absorbed form, 16 heads per GPU
    peak, peak8 = b200.gpu.dense_flops_per_s("bf16"), b200.gpu.dense_flops_per_s("fp8")
    e_f = F.pre_e_f[0]

    def compute(prompt: float) -> float:  # no memory time: the compute seconds alone
        return float(_prefill_attention(F, 1e30, peak, np.array([prompt]), np.array([prompt / 2]), peak8)[1][0])

    # 8192 tokens: mean over positions of min(position, 2048) = 2048 - 2048^2 / (2 x 8192) = 1792
    want = 8192 * (1792 * F.attn_full_flops[0] / (peak * e_f) + 4096 * F.index_flops[0] / (peak8 * e_f))
    assert compute(8192) == pytest.approx(want, rel=1e-9)
    # a prompt shorter than top-k attends to all of it
    want = 1024 * 512 * (F.attn_full_flops[0] / (peak * e_f) + F.index_flops[0] / (peak8 * e_f))
    assert compute(1024) == pytest.approx(want, rel=1e-9)


def test_benchmark_mean_lengths_by_hand() -> None:
    """InferenceX draws randint(int(0.8 x 1024), 1024 + 1): mean (819 + 1024) / 2; unknown or 1: as stated."""
    from advisor.calibrate.predict_table import mean_lengths

    got = mean_lengths(np.array([1024.0, 1024.0, 1024.0, 8192.0]), np.array([0.8, np.nan, 1.0, 0.8]))
    assert got.tolist() == [921.5, 1024.0, 1024.0, (6553 + 8192) / 2]


def test_equal_lengths_keep_waves_only_under_a_prefill_first_scheduler() -> None:
    fixed = np.array([True, False])
    assert wave_share(0.3, scheduler("sglang", 8192), fixed).tolist() == [1.0, 0.3]
    assert wave_share(0.3, scheduler("vllm", 8192), fixed).tolist() == [0.3, 0.3]
    assert wave_share(0.3, scheduler("trtllm", 8192), fixed).tolist() == [0.3, 0.3]


@pytest.mark.parametrize("share", [0.0, 0.4, 1.0])
def test_receive_interval_waits_half_a_cycle_of_decode_steps(share: float) -> None:
    # SGLang --scheduler-recv-interval 30 (the InferenceX DeepSeek-R1 script from 16 users), DeepSeek-R1 FP4 on
    # 8x B200: a request arriving in a decode stretch waits (30 - 1) / 2 more decode steps than with 1; of
    # staggered arrivals only those outside prefill steps, of a wave every one
    from advisor.cost.serving import RunOptions
    from advisor.cost.timing import predict
    from advisor.hardware import load_profile

    b200 = load_profile("b200-sxm")
    F = feats("nvidia/DeepSeek-R1-NVFP4", Plan(tp=8), b200)
    terms = Terms(bench_wave_share=share)
    args = (F, b200, terms, "sglang", np.array([32.0]), np.array([1024.0]), np.array([1024.0]))
    base = predict(*args, benchmark=True)
    polled = predict(*args, benchmark=True, options=RunOptions(recv_interval=np.array([30.0])))
    step_s, pre = float(base["step_total"][0]), float(base["prefill_share"][0])
    want = 29 / 2 * step_s * (1 - (1 - share) * pre)
    assert float(polled["ttft_s"][0] - base["ttft_s"][0]) == pytest.approx(want, rel=1e-9)
    assert 0 < pre < 1 and float(polled["tpot_s"][0]) == float(base["tpot_s"][0])


def test_an_arrival_waits_half_a_step_and_the_step_scheduled_ahead_of_it_unless_the_engine_idles() -> None:
    from advisor.cost.serving import arrival_steps

    running = np.array([1.0, 2.0, 8.0])
    assert arrival_steps(running, 1.0).tolist() == [0.0, 1.5, 1.5]
    assert arrival_steps(running, np.array([0.0, 0.0, 1.0])).tolist() == [0.0, 0.5, 1.5]


@pytest.mark.parametrize(("engine", "step_key"), [("vllm", "tpot_s"), ("trtllm", "tpot_s"), ("sglang", "step_total")])
def test_a_scheduler_one_step_ahead_adds_one_step_to_a_staggered_arrival(engine: str, step_key: str) -> None:
    # DeepSeek-R1 FP4 on 8x B200, 32 users, steady state: with the next step already scheduled (vLLM's async
    # scheduling, SGLang's and TensorRT-LLM's overlap loops) an arrival waits one step more: the mixed step
    # (vLLM, TensorRT-LLM; TPOT here), a decode step (SGLang); a lone user finds the engine idle either way
    from advisor.cost.serving import RunOptions
    from advisor.cost.timing import predict
    from advisor.hardware import load_profile

    b200 = load_profile("b200-sxm")
    F = feats("nvidia/DeepSeek-R1-NVFP4", Plan(tp=8), b200)
    users = np.array([32.0, 1.0])
    args = (F, b200, Terms(), engine, users, np.array([1024.0]), np.array([1024.0]))
    ahead, sync = predict(*args), predict(*args, options=RunOptions(scheduled_ahead=0.0))
    assert float(ahead["ttft_s"][0] - sync["ttft_s"][0]) == pytest.approx(float(sync[step_key][0]), rel=1e-9)
    assert float(ahead["ttft_s"][1]) == float(sync["ttft_s"][1])
    assert np.array_equal(ahead["tpot_s"], sync["tpot_s"])


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("users", [4, 16, 64])
def test_the_serving_closed_form_follows_a_step_by_step_closed_loop(users: int, engine: str,
                                                                   hw: HardwareProfile) -> None:
    """`serve` (staggered arrivals in steady state, the first round as a wave) against the loop it models
    (`scripts/closed_loop.py: simulate`: vLLM's scheduler or SGLang's prefill-first one, InferenceX's client of 10
    rounds with lengths drawn from 0.8-1 x), on a step of 5 ms + 20 us per decode token + 30 us per prompt token:
    with the share of requests in the released round (1 in 10), TTFT within 15% and TPOT within 5% of the simulated
    means."""
    def step(dec: Any, ctx: Any, pre: Any, ctx_pre: Any, sampled: Any) -> Any:
        return 5e-3 + 20e-6 * np.asarray(dec) + 30e-6 * np.asarray(pre)

    F = feats(LLAMA8, Plan(tp=1), hw)
    c, isl, osl = np.array([float(users)]), 1024, 256
    out = serve(F, TERMS.model_copy(update={"request_overhead_us": 0.0}), lambda *a: {"total": step(*a)},
                scheduler(engine, 8192.0), c, np.array([0.9 * isl]), np.array([0.9 * osl]), 0.1)
    ttft, tpot, _ = closed_loop.simulate(lambda *a: float(step(*a)), 8192.0, users, isl, osl,
                                         mixed=engine != "sglang")
    assert float(out["ttft_s"][0]) == pytest.approx(ttft, rel=0.15)
    assert float(out["tpot_s"][0]) == pytest.approx(tpot, rel=0.05)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize(("ranks", "per_rank"), [(4, 4), (4, 16), (4, 64), (8, 16)])
def test_lockstepped_dp_ranks_follow_a_step_by_step_closed_loop(engine: str, ranks: int, per_rank: int,
                                                               hw: HardwareProfile) -> None:
    """DP ranks of a MoE model step together, each with its own scheduler: a step lasts as long as its busiest
    rank's GEMMs and attention, and its MoE runs every rank's tokens (`serving.py: _lockstep`). Against the loop
    (`closed_loop.simulate` with `ranks`; vLLM's mixed steps, SGLang's prefill-first ones) on a step of 5 ms + 20 us
    per decode token + 60 us per prompt token on the busiest rank + 5 us per token of every rank for the MoE: TTFT
    within 20%, TPOT within 15%. Chunks taken as aligned on every rank (as TensorRT-LLM's attention-DP balance makes
    them), TPOT comes out > 20% short from 16 users per rank."""
    def step(dec: Any, ctx: Any, pre: Any, ctx_pre: Any, sampled: Any) -> dict[str, Any]:
        moe = 5e-6 * ranks * (np.asarray(dec) + np.asarray(pre))
        return {"total": 5e-3 + 20e-6 * np.asarray(dec) + 60e-6 * np.asarray(pre) + moe, "mech_moe": moe}

    def lockstep(shapes: list[tuple[float, ...]]) -> float:
        return max(5e-3 + 20e-6 * s[0] + 60e-6 * s[2] for s in shapes) + 5e-6 * sum(s[0] + s[2] for s in shapes)

    F = feats("Qwen/Qwen3-30B-A3B", Plan(tp=1, dp=ranks, ep=ranks), hw)
    users, isl, osl = ranks * per_rank, 1024, 256
    args = (F, TERMS.model_copy(update={"request_overhead_us": 0.0}), step, scheduler(engine, 8192.0),
            np.array([float(users)]), np.array([0.9 * isl]), np.array([0.9 * osl]), 0.1)
    out, aligned = serve(*args), serve(*args, options=RunOptions(adp_timeout_iters=60.0))
    ttft, tpot, _ = closed_loop.simulate(lambda *a: float(step(*a)["total"]), 8192.0, users, isl, osl,
                                         ranks=ranks, lockstep=lockstep, mixed=engine != "sglang")
    assert float(out["ttft_s"][0]) == pytest.approx(ttft, rel=0.20)
    assert float(out["tpot_s"][0]) == pytest.approx(tpot, rel=0.15)
    if per_rank >= 16:
        assert float(aligned["tpot_s"][0]) < 0.8 * tpot
