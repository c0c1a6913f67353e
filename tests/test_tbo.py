"""SGLang's two-batch overlap (`cost/tbo.py`): the step it gives against a hand computation from the step model's
own parts (each micro-batch's step at half the tokens, each exchange call timed directly by the cluster's timer),
and the setting's path: Settings -> EngineArgs -> Features -> the printed command."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.calibrate.store import terms_for
from advisor.cost.collectives import A2A_COMBINE, A2A_DISPATCH, SLOTS
from advisor.cost.features import Features
from advisor.cost.plan import Plan
from advisor.cost.step import comm_fn, pad_tokens, step_time
from advisor.cost.sweep import make_case
from advisor.cost.workload import Settings
from advisor.hardware import load_profile
from advisor.hardware.cluster import load_cluster


@pytest.fixture(scope="module")
def v3():  # type: ignore[no-untyped-def]
    from advisor.arch.redundant import redundant_experts
    from advisor.resolve import resolve

    return redundant_experts(resolve("deepseek-ai/DeepSeek-V3").arch, 32)  # EPLB's 288 slots: EP72 divides them


def _case(arch, nodes: int, dp: int, tbo: bool):  # type: ignore[no-untyped-def]
    hw = load_profile("h100-sxm")
    cluster = load_cluster(hw, nodes)
    s = Settings(engine="sglang", max_num_seqs=256, max_num_batched_tokens=16384, max_model_len=4500,
                 gpu_memory_utilization=0.85, two_batch_overlap=tbo)
    case = make_case(arch, Plan(tp=1, dp=dp, ep=dp), hw, s, cluster=cluster)
    F = Features.from_flat(np.stack([case.features()])).grid()
    return hw, F, terms_for(hw, "sglang")[0], comm_fn(hw, "sglang", cluster)


def _step(F, hw, terms, comm, dec: float, ctx: float, pre: float, ctx_pre: float):  # type: ignore[no-untyped-def]
    a = [np.full((1, 1, 1), v) for v in (dec, ctx, pre, ctx_pre, max(dec, 1.0))]
    return {k: float(np.ravel(v)[0]) for k, v in step_time(F, hw, terms, comm, *a).items()}


def _exchange(F, comm, tokens: float) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Dispatch and combine seconds of one step at `tokens` per rank, every call timed by the cluster's timer."""
    out = []
    for slot in (A2A_DISPATCH, A2A_COMBINE):
        k = SLOTS.index(slot)
        calls, per, n, span = (float(np.ravel(x[..., k])[0]) for x in (F.coll_calls, F.coll_bytes, F.coll_group,
                                                                        F.coll_span))
        moe = (int(F.hidden.ravel()[0]), int(F.topk.ravel()[0]), int(F.experts.ravel()[0]))
        out.append(calls * float(np.ravel(comm(slot.op, np.array([tokens * per]), int(n), int(span), "deepep",
                                                     moe))[0]))
    return out[0], out[1]


def test_decode_step_is_the_overlap_of_the_halves(v3) -> None:  # type: ignore[no-untyped-def]
    """EP72 on 9 H100 nodes, 256 sequences a rank at KV 2,000: 2 (max(G, d) + M + max(A, c)) from one half's
    GEMM, MoE and attention at 128 sequences and one half's DeepEP dispatch/combine, plus the other collectives and
    the fixed terms once (`_compute_moe_deepseek_blog_decode`); to 1e-9."""
    hw, F, terms, comm = _case(v3, 9, 72, True)
    _, off, _, _ = _case(v3, 9, 72, False)
    assert float(F.tbo.ravel()[0]) == 1.0 and float(off.tbo.ravel()[0]) == 0.0
    full = _step(off, hw, terms, comm, 256, 2000, 0, 0)
    half = _step(off, hw, terms, comm, 128, 2000, 0, 0)
    d, c = _exchange(off, comm, 128)
    D, C = _exchange(off, comm, 256)
    assert d > 0 and c > 0 and D > d
    s = terms.comm_latency_scale
    hand = 2 * (max(half["mech_gemm"], d * s) + half["mech_moe"] + max(half["mech_attention"], c * s)) \
        + full["mech_collectives"] - (D + C) * s + full["mech_fixed"]
    got = _step(F, hw, terms, comm, 256, 2000, 0, 0)
    assert got["total"] == pytest.approx(hand, rel=1e-9)
    assert sum(got[k] for k in ("weights", "kv", "compute", "comm", "overhead")) == pytest.approx(got["total"])
    assert sum(got[f"mech_{k}"] for k in ("gemm", "moe", "attention", "collectives", "fixed")) == \
        pytest.approx(got["total"])
    # the exchange is the larger part here, so the overlap saves at least a quarter of the compute it hides under
    assert got["total"] < full["total"] - 0.25 * 2 * (half["mech_gemm"] + half["mech_attention"])


def test_prefill_step_is_the_overlap_with_fewer_gemm_sms(v3) -> None:  # type: ignore[no-untyped-def]
    """EP32 on 4 nodes, 16,384 prompt tokens a rank: max(X, d) + max(M, d) + max(M, c) + max(X, c), X = G + A, the
    halves' GEMMs at (132 - 20) / 132 of their FLOP efficiency (`_compute_moe_deepseek_blog_prefill` sets DeepGEMM
    to the SMs DeepEP leaves)."""
    from dataclasses import replace

    hw, F, terms, comm = _case(v3, 4, 32, True)
    _, off, _, _ = _case(v3, 4, 32, False)
    full = _step(off, hw, terms, comm, 0, 0, 16384, 1000)
    slow = replace(off, gemm_e_f=off.gemm_e_f * 112 / 132, moe_e_f=off.moe_e_f * 112 / 132)
    half = _step(slow, hw, terms, comm, 0, 0, 8192, 1000)
    tokens = float(np.ravel(pad_tokens(np.array(16384.0), F.graph_max))[0])
    d, c = (x * terms.comm_latency_scale for x in _exchange(off, comm, tokens / 2))
    D, C = (x * terms.comm_latency_scale for x in _exchange(off, comm, tokens))
    X, M = half["mech_gemm"] + half["mech_attention"], half["mech_moe"]
    hand = max(X, d) + max(M, d) + max(M, c) + max(X, c) + full["mech_collectives"] - (D + C) + full["mech_fixed"]
    assert _step(F, hw, terms, comm, 0, 0, 16384, 1000)["total"] == pytest.approx(hand, rel=1e-9)


def test_off_by_default_and_sglang_only(v3) -> None:  # type: ignore[no-untyped-def]
    from advisor.cost.engine_args import resolve
    from advisor.decide.command import Serving, serve_command

    hw = load_profile("h100-sxm")
    plan = Plan(tp=1, dp=8, ep=8)
    assert resolve(Settings(engine="sglang"), v3, plan, hw).two_batch_overlap is False
    args = resolve(Settings(engine="sglang", two_batch_overlap=True), v3, plan, hw)
    assert args.two_batch_overlap is True
    with pytest.raises(ValueError, match="SGLang's"):
        Settings(engine="vllm", two_batch_overlap=True)
    # the printed launch: EP32 over 4 nodes with DeepEP, as the prediction assumed it
    wide = Plan(tp=1, dp=32, ep=32)
    cmd = serve_command(Serving(model="deepseek-ai/DeepSeek-V3", plan=wide, checkpoint_dtype="fp8",
                                remote_code=False, moe=True), hw,
                        resolve(Settings(engine="sglang", two_batch_overlap=True), v3, wide, hw),
                        cluster=load_cluster(hw, 4)).command
    assert cmd.count("--enable-two-batch-overlap") == 4 and cmd.count("--moe-a2a-backend deepep") == 4
    plain = serve_command(Serving(model="deepseek-ai/DeepSeek-V3", plan=wide, checkpoint_dtype="fp8",
                                  remote_code=False, moe=True), hw, resolve(Settings(engine="sglang"), v3, wide, hw),
                          cluster=load_cluster(hw, 4)).command
    assert "two-batch" not in plain
