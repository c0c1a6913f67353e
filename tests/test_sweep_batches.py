"""The sweep's shortcuts change no number: a plan's distinct padded batches spread back to its grid exactly
(advisor/cost/batches.py); an `evaluate` over many kinds of model gives, bit for bit, what it gives with the grid
costed point by point, every step's decode attention computed afresh (`step._shared_decode_attention`) and the mixed
scheduler's steady state solved at every point (`mixed_queue.lifetime_queue`), and a case's results are the ones it
gets alone (cases with the same features are evaluated once); attention's powers taken once per plan and the
p-norm's one-power form give the kernels' values point by point."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import catalog_arch
from hypothesis import given
from hypothesis import strategies as st

from advisor.cost import batches, kernels, mixed_queue, step
from advisor.cost.batches import distinct
from advisor.cost.features import Features
from advisor.cost.step import pad_tokens
from advisor.cost.sweep import Case, all_cases, evaluate
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile, load_profile

CONCURRENCY = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
INPUT, OUTPUT = np.array([128, 1024, 8192, 32768]), np.array([128, 1024, 1024, 1024])
# one model per kernel path on the RTX PRO 6000 box: Marlin INT4 experts, MLA, DSA, windowed layers, Gated
# DeltaNet, mamba state, a dense GQA model; MiniMax-M2.5 and M2.7 share one architecture (identical features)
MODELS = ("moonshotai/Kimi-K2-Thinking", "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3.2",
          "XiaomiMiMo/MiMo-V2-Flash", "Qwen/Qwen3-Next-80B-A3B-Thinking",
          "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "meta-llama/Llama-3.1-8B", "MiniMaxAI/MiniMax-M2.5",
          "MiniMaxAI/MiniMax-M2.7")


@pytest.fixture(scope="module")
def box() -> HardwareProfile:
    return load_profile("rtx-pro-6000-server")


@pytest.fixture(scope="module")
def cases(box: HardwareProfile) -> list[Case]:
    return [c for m in MODELS for c in all_cases(catalog_arch(m), box, Settings()) if c.runs]


def test_distinct_batches_spread_back_to_the_grid() -> None:
    rng = np.random.default_rng(7)
    graph_max = np.array([512.0, 512.0, 0.0])[:, None, None]  # the last plan runs eagerly: nothing padded
    raw = np.repeat(rng.integers(1, 700, size=(3, 9, 1)) / np.array([1.0, 3.0, 7.0])[:, None, None], 4, axis=2)
    tokens = pad_tokens(raw, graph_max)  # batches repeat over the lengths; padding merges more of them
    b = distinct(tokens, (3, 1, 1))
    assert b is not None
    assert b.spread(b.values).tobytes() == tokens.tobytes()
    for p in range(3):
        assert set(b.values[p, :, 0]) == set(tokens[p].ravel())
    assert distinct(np.arange(36.0).reshape(1, 9, 4), (1, 1, 1)) is None  # every value its own: the grid itself


def test_shortcuts_change_no_number(cases: list[Case], monkeypatch: pytest.MonkeyPatch) -> None:
    assert {c.arch.model for c in cases} == set(MODELS)
    fast = evaluate(cases, Terms(), CONCURRENCY, INPUT, OUTPUT).out
    monkeypatch.setattr(batches, "DISTINCT_SHARE", 0.0)  # every grid point costed as itself
    monkeypatch.setattr(step, "_shared_decode_attention", step._decode_attention)
    monkeypatch.setattr(mixed_queue, "MAX_TABLE_REQUESTS", 0)  # the steady state solved at every grid point
    plain = evaluate(cases, Terms(), CONCURRENCY, INPUT, OUTPUT).out
    for key, arr in plain.items():
        assert fast[key].tobytes() == arr.tobytes(), key
    assert np.all(fast["tpot_s"] > 0)


def test_a_case_in_the_sweep_is_the_case_alone(cases: list[Case]) -> None:
    together = evaluate(cases, Terms(), CONCURRENCY, INPUT, OUTPUT).out
    for i in range(0, len(cases), 7):  # every 7th case alone (each model at several plans)
        alone = evaluate([cases[i]], Terms(), CONCURRENCY, INPUT, OUTPUT).out
        for key, arr in alone.items():
            assert together[key][i].tobytes() == arr[0].tobytes(), (cases[i].arch.model, cases[i].plan.label(), key)


def test_cases_with_one_architecture_predict_alike(cases: list[Case]) -> None:
    out = evaluate(cases, Terms(), CONCURRENCY, INPUT, OUTPUT).out
    by_plan = {(c.arch.model, c.plan.label()): i for i, c in enumerate(cases)}
    pairs = [(i, by_plan[("MiniMaxAI/MiniMax-M2.7", plan)]) for (model, plan), i in by_plan.items()
             if model == "MiniMaxAI/MiniMax-M2.5" and ("MiniMaxAI/MiniMax-M2.7", plan) in by_plan]
    assert pairs
    for a, b in pairs:
        assert all(np.array_equal(v[a], v[b]) for v in out.values())
        assert out["tpot_s"][a, 0, 0] > 0


@given(st.floats(0.0, 1e6), st.floats(0.0, 1e6), st.floats(1.0, 60.0))
def test_the_p_norm_in_one_power_is_the_p_norm(a: float, b: float, p: float) -> None:
    s = max(a, b) or 1.0  # the textbook form on scaled times (unscaled, 1e6^60 overflows)
    want = s * ((a / s) ** p + (b / s) ** p) ** (1 / p)
    assert float(kernels.pnorm(a, b, p)) == pytest.approx(want, rel=1e-12, abs=1e-300)
    assert float(kernels.pnorm(a, b, p)) >= max(a, b)


def _decode_attention_point_by_point(F: Features, bw: float, peak: float, dec: np.ndarray,
                                     ctx: np.ndarray) -> np.ndarray:
    """Decode attention microseconds with each kernel evaluated at every grid point's (sequences, context), as
    `step._decode_attention` computed it before its powers were taken once per plan."""
    P = kernels.params()["attention"]
    full_ctx = np.where(F.index_topk > 0, np.minimum(ctx, F.index_topk), ctx)
    win_ctx = np.minimum(ctx, np.where(F.window > 0, F.window, ctx))

    def gqa(heads: np.ndarray, kv_heads: np.ndarray, head_dim: np.ndarray, c: np.ndarray) -> np.ndarray:
        f = {"t0_us": 0.0, "e_bw": F.attn_e_bw, "e_f": F.attn_e_f, "rho_ns_per_B": 0.0}
        return kernels.attention_decode_us(f, F.b_kv, dec, c, heads, kv_heads, head_dim, bw, peak, P)

    mla = kernels.mla_decode_us({"e_bw": F.attn_e_bw, "e_f": F.attn_e_f}, F.b_kv, dec, full_ctx, F.attn_heads,
                                F.mla_latent, F.mla_rope, bw, peak)
    full = np.where(F.attn_mla > 0, mla, gqa(F.attn_heads, F.attn_kv_heads, F.attn_head_dim, full_ctx))
    full = np.where(F.attn_layers > 0, full, 0.0)
    win = np.where(F.win_layers > 0, gqa(F.win_heads, F.win_kv_heads, F.win_head_dim, win_ctx), 0.0)
    indexer = kernels.dsa_indexer_us({**kernels.dsa_params(), "t0_us": 0.0}, dec, ctx, F.index_bytes, bw)
    return F.attn_layers * (full + indexer) + F.win_layers * win


def test_attention_per_plan_is_the_kernels_point_by_point(cases: list[Case], box: HardwareProfile) -> None:
    """MLA (DeepSeek-R1, Kimi-K2), DSA's top-k and indexer (DeepSeek-V3.2), windowed layers (MiMo-V2-Flash), GQA
    and plans without attention layers (Nemotron's mamba, Qwen3-Next's Gated DeltaNet) over sequences x contexts:
    within 1e-12 of the kernels evaluated at every point; prefill attention likewise against its p-norm per point."""
    F = Features.from_flat(np.stack([c.features() for c in cases])).grid()
    bw, peak = box.gpu.mem_bw_bytes_per_s, box.gpu.dense_flops_per_s("bf16")
    dec = np.array([0.0, 1.0, 3.0, 17.5, 256.0])[None, :, None]
    ctx = np.array([1.0, 700.0, 2048.0, 9000.0, 40000.0])[None, None, :]
    got, _ = step._decode_attention(F, bw, peak, dec, ctx)
    want = _decode_attention_point_by_point(F, bw, peak, dec, ctx) * 1e-6
    assert np.all(want[np.ravel(F.attn_layers + F.win_layers > 0), 1:] > 0)  # every plan with attention, dec > 0
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0.0)
    pre, ctx_pre = np.array([0.0, 64.0, 8192.0])[None, :, None], np.array([64.0, 4096.0, 20000.0])[None, None, :]
    peak8 = box.gpu.dense_flops_per_s("fp8")
    w, c, _ = step._prefill_attention(F, bw, peak, pre, ctx_pre, peak8)
    k = np.maximum(F.index_topk, 1.0)
    ctx_full = np.where((F.index_topk > 0) & (2 * ctx_pre > k), k - k * k / (4 * ctx_pre), ctx_pre)
    ctx_win = np.minimum(ctx_pre, np.where(F.window > 0, F.window, ctx_pre))
    tc = pre * (ctx_full * F.attn_full_flops + ctx_win * F.attn_win_flops) / (peak * F.pre_e_f) \
        + pre * ctx_pre * F.index_flops / (peak8 * F.pre_e_f)
    tw = pre * F.pre_bytes / (bw * F.pre_e_bw)
    p = kernels.params()["prefill"]["p"]
    np.testing.assert_allclose(w, tw, rtol=1e-12, atol=0.0)
    np.testing.assert_allclose(w + c, (tw ** p + tc ** p) ** (1 / p), rtol=1e-12, atol=0.0)


def test_the_steady_state_tabulated_per_request_count_is_the_grid_s() -> None:
    """`lifetime_queue` against `fixed_point` at every point: whole numbers of requests under per-plan budgets and
    (MTP-like, fractional) decode steps per plan and length, bit for bit; a grid it cannot tabulate (a fraction of
    a request, a prompt length that differs between plans) is solved as it is."""
    rng = np.random.default_rng(11)
    P = 40
    users = np.ceil(CONCURRENCY[None, :, None] / rng.choice([1, 2, 4, 8], size=(P, 1, 1)))
    running = np.maximum(np.minimum(users, rng.integers(1, 300, size=(P, 1, 4))), 1.0)  # capped by KV room
    decodes = (OUTPUT[None, None, :] - 1) / rng.choice([1.0, 1.0, 2.7, 3.1], size=(P, 1, 1))
    budget = rng.choice([2048.0, 8192.0, 16384.0], size=(P, 1, 1))
    grid = mixed_queue.fixed_point(running, INPUT[None, None, :], decodes, budget)
    table = mixed_queue.lifetime_queue(running, INPUT[None, None, :], decodes, budget)
    for g, t in zip(grid, table, strict=True):
        assert np.broadcast_to(g, running.shape).tobytes() == t.tobytes()
    assert float(table[4].max()) > 0 and float(table[0].min()) > 0  # prompts do wait; decodes do run
    for r, prompts in ((running + 0.5, INPUT[None, None, :]),  # a fraction of a request
                       (running, INPUT[None, None, :] + np.arange(P)[:, None, None])):  # prompts differ by plan
        want = mixed_queue.fixed_point(r, prompts, decodes, budget)
        got = mixed_queue.lifetime_queue(r, prompts, decodes, budget)
        assert all(np.array_equal(np.broadcast_to(w, r.shape), g) for w, g in zip(want, got, strict=True))
