"""Disaggregated prefill/decode as a plan (`cost/disagg*.py`): KV bytes moved per request by hand for a GQA and an
MLA model, the link between pools from the hardware profile, TTFT parts adding up, throughput limited by the
slowest side, and bad input refused in one line or as a refused plan."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import catalog_arch

from advisor.arch.model import ModelArch
from advisor.cost.disagg import make_disagg
from advisor.cost.disagg_predict import TTFT_PARTS, predict_disagg
from advisor.cost.disagg_transfer import KvLink, kv_bytes, pool_link
from advisor.cost.plan import Plan
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile, load_profile
from advisor.hardware.cluster import Cluster, load_cluster

MINIMAX = "MiniMaxAI/MiniMax-M2.5"
LLAMA8 = "meta-llama/Llama-3.1-8B"


@pytest.fixture(scope="module")
def minimax() -> ModelArch:
    return catalog_arch(MINIMAX)


@pytest.fixture(scope="module")
def llama8() -> ModelArch:
    return catalog_arch(LLAMA8)


def test_gqa_kv_bytes_by_hand(minimax: ModelArch) -> None:
    # MiniMax-M2.5: 62 layers x K,V x 8 KV heads x head_dim 128 x 2 B (BF16) = 253,952 B per token at TP1
    per_token = 62 * 2 * 8 * 128 * 2
    b = kv_bytes(minimax, Plan(tp=1), Plan(tp=4), 2.0, 8192)
    assert b.recv == per_token / 4 * 8192 == 520_093_696  # 2 of the 8 heads on each decode GPU
    assert b.total == per_token * 8192  # the four decode GPUs hold every head once
    assert b.send == b.total  # one prefill GPU holds all heads: it sends all of them
    b8 = kv_bytes(minimax, Plan(tp=8), Plan(tp=4), 2.0, 8192)
    assert b8.send == per_token / 8 * 8192  # eight senders share the heads evenly
    assert kv_bytes(minimax, Plan(tp=1), Plan(tp=4), 1.0, 8192).recv == b.recv / 2  # FP8 KV halves it
    # a decode PP stage holds its own layers only
    assert kv_bytes(minimax, Plan(tp=2), Plan(tp=2, pp=2), 2.0, 1000).recv == per_token / 2 / 2 * 1000


def test_gqa_heads_replicated_below_one_per_rank() -> None:
    qwen = catalog_arch("Qwen/Qwen3-235B-A22B")
    # 94 layers x 2 x 4 KV heads x 128 x 2 B at TP1; at TP8 every rank still holds one head (vLLM replicates)
    one_head = 94 * 2 * 1 * 128 * 2
    b = kv_bytes(qwen, Plan(tp=4), Plan(tp=8), 2.0, 100)
    assert b.recv == one_head * 100
    assert b.total == 8 * one_head * 100  # two copies of each of the 4 heads
    assert b.send == b.total / 4  # the 4 prefill ranks (one head each) serve 2 readers each


def test_mla_latent_copied_whole_to_every_decode_rank() -> None:
    ds = catalog_arch("deepseek-ai/DeepSeek-V3")
    latent = 61 * (512 + 64) * 2  # 70,272 B per token: kv_lora_rank + RoPE key, every layer, BF16
    b = kv_bytes(ds, Plan(tp=4), Plan(tp=8), 2.0, 1024)
    assert b.recv == latent * 1024  # each of the 8 decode ranks receives the whole latent
    assert b.total == 8 * latent * 1024
    assert b.send == 2 * latent * 1024  # 4 prefill ranks, each read by 2 decode ranks
    # prefill TP8 -> decode TP2: only 2 of the 8 replicated ranks are read, one copy each
    assert kv_bytes(ds, Plan(tp=8), Plan(tp=2), 2.0, 1024).send == latent * 1024
    # attention-DP decode (TP1 per rank): one GPU receives one copy
    assert kv_bytes(ds, Plan(tp=1, dp=8, ep=8), Plan(tp=1, dp=16, ep=16), 1.0, 1024).recv == latent / 2 * 1024


def test_windowed_layers_move_their_window_only() -> None:
    oss = catalog_arch("openai/gpt-oss-120b")
    full = oss.kv_bytes_per_token(1, 2.0)
    win = oss.windowed_kv_bytes_per_token(1, 2.0)
    window = max(g.window or 0 for g in oss.attn_groups)
    assert kv_bytes(oss, Plan(), Plan(), 2.0, 8192).recv == full * 8192 + win * window


def test_pool_link_from_profile(hw: HardwareProfile) -> None:
    # 8x RTX PRO 6000, two sockets of four: 4 prefill + 4 decode GPUs cross the sockets (measured 50.97 GB/s)
    link = pool_link(Cluster(hw), 4, 1, 4, 1)
    assert link.main.name == "PCIe peer-to-peer across sockets"
    assert link.gbps == pytest.approx(50.97)
    assert pool_link(Cluster(hw), 2, 1, 2, 1).gbps == pytest.approx(56.57)  # one socket
    b200 = load_profile("b200-sxm")
    assert pool_link(Cluster(b200), 4, 1, 4, 1).main.name == "NVLink"
    assert pool_link(Cluster(b200), 4, 1, 4, 1).gbps == 900.0
    # P2P off (RTX 4090 profile): the profile's link is staged through host memory
    rtx4090 = load_profile("rtx-4090")
    assert "through host memory" in pool_link(Cluster(rtx4090), 2, 1, 2, 1).main.name
    # two B200 nodes, prefill on one and decode on the other: one 400 Gb/s NIC per GPU (50 GB/s), GPUDirect RDMA,
    # at the 24 of 25 GB/s per 200 Gb/s that NCCL achieves (`hardware/scaleout.py: NIC_SHARE`)
    two = load_cluster(b200, 2)
    net = pool_link(two, 8, 1, 8, 1)
    assert "GPUDirect RDMA" in net.main.name and net.gbps == pytest.approx(50.0 * 24 / 25)
    # the RTX PRO 6000 box's two ConnectX-7 without GPUDirect RDMA: 100 GB/s per node shared by 8 GPUs, staged
    box2 = load_cluster(hw, 2, "cx7-2x400-host")
    staged = pool_link(box2, 8, 1, 8, 1)
    assert "through host memory" in staged.main.name and staged.gbps < 100 / 8
    # an NVL72 rack: 18 trays in one NVLink domain, every pair on NVLink
    rack = load_cluster(load_profile("gb200"), 18)
    assert pool_link(rack, 8, 4, 8, 4).main.name == "NVLink"


def test_transfer_time_by_hand(hw: HardwareProfile, minimax: ModelArch) -> None:
    d = make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 1, Settings())
    recv = 62 * 2 * 2 * 128 * 2 * 8192  # 2 heads per decode GPU, 8,192 tokens
    assert d.transfer_s(8192) == pytest.approx(0.38e-6 + recv / 50.97e9, rel=1e-9)
    host = KvLink("PCIe through host memory", 21.0, 14.0, "test: a P2P-off Gen4 x16 box (RTX 4090 profile)")
    dh = make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 1, Settings(), link=host)
    assert dh.transfer_s(8192) == pytest.approx(14e-6 + recv / 21e9, rel=1e-9)


def test_ttft_parts_add_up(hw: HardwareProfile, minimax: ModelArch) -> None:
    d = make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 1, Settings())
    terms = Terms()
    for users in (1, 8, 32, 200):
        p = predict_disagg(d, terms, users, 8192, 1024)
        assert p.ttft_ms is not None and p.ttft_parts_ms is not None
        assert set(p.ttft_parts_ms) == set(TTFT_PARTS)
        assert sum(p.ttft_parts_ms.values()) == pytest.approx(p.ttft_ms, rel=1e-9)
        assert p.ttft_parts_ms["request"] == pytest.approx(terms.request_overhead_us / 1e3)
    one = predict_disagg(d, terms, 1, 8192, 1024)
    parts = one.ttft_parts_ms or {}
    # one user: nothing to wait for, the whole transfer exposed (vLLM pulls after the prefill), a decode step for
    # the first token equal to the TPOT of a batch of one
    assert parts["prefill_wait"] < 1.0 and parts["queue"] == 0.0
    assert parts["transfer"] == pytest.approx(one.transfer_alone_ms, rel=0.01)
    assert parts["first_step"] == pytest.approx(one.tpot_ms, rel=0.01)
    # past what the pools sustain, users queue and TTFT grows by the queue alone
    busy = predict_disagg(d, terms, 400, 8192, 1024)
    assert (busy.ttft_parts_ms or {})["queue"] > 0
    assert busy.output_tok_s == pytest.approx(predict_disagg(d, terms, 800, 8192, 1024).output_tok_s, rel=1e-6)


@pytest.mark.parametrize(("x", "y", "limit"), [(1, 6, "prefill"), (4, 1, "decode")])
def test_throughput_is_the_slowest_side(hw: HardwareProfile, llama8: ModelArch, x: int, y: int, limit: str) -> None:
    """Far past saturation the deployment serves what its slowest side sustains alone (within the decode grid's
    3% step)."""
    d = make_disagg(llama8, hw, Plan(tp=1), x, Plan(tp=1), y, Settings())
    p = predict_disagg(d, Terms(), 20_000, 8192, 1024)
    cap = p.capacity_requests_per_s or {}
    assert p.bottleneck == limit
    assert p.requests_per_s == pytest.approx(min(cap.values()), rel=0.04)
    assert p.output_tok_s == pytest.approx((p.requests_per_s or 0) * 1024, rel=1e-9)
    assert p.output_tok_s_per_gpu == pytest.approx((p.output_tok_s or 0) / (x + y))


def test_engines_move_kv_differently(hw: HardwareProfile, llama8: ModelArch) -> None:
    """vLLM pulls the whole KV once the prefill is done and computes the first token in a decode step; SGLang sends
    each chunk as the next computes and emits the prefill's token (`cost/disagg.py`)."""
    slow = KvLink("slow what-if link", 2.0, 0.0, "test")  # 2 GB/s: the transfer is long enough to see overlap
    out = {}
    for engine in ("vllm", "sglang"):
        s = Settings(engine=engine, max_num_batched_tokens=2048)
        d = make_disagg(llama8, hw, Plan(tp=1), 1, Plan(tp=1), 1, s, link=slow)
        out[engine] = predict_disagg(d, Terms(), 1, 16384, 256)
    v, g = (out[e].ttft_parts_ms or {} for e in ("vllm", "sglang"))
    assert v["transfer"] == pytest.approx(out["vllm"].transfer_alone_ms, rel=0.01)
    assert g["transfer"] < 0.5 * (out["sglang"].transfer_alone_ms or 0)  # 8 chunks: most of it hidden
    assert v["first_step"] > 0 and g["first_step"] == 0


def test_sglang_prefill_waits_for_the_decode_to_reserve_its_kv(hw: HardwareProfile, llama8: ModelArch) -> None:
    """SGLang's decode pre-allocates a request's KV at its next step boundary before the prefill may start
    (`cost/disagg.py: PREALLOCATES`): with other users decoding that wait equals the hand-off after the transfer
    (half a decode step and the steps prepared ahead), alone next to nothing; vLLM's decode pulls after the prefill."""
    out = {}
    for engine in ("vllm", "sglang"):
        d = make_disagg(llama8, hw, Plan(tp=1), 1, Plan(tp=1), 1, Settings(engine=engine))
        out[engine] = {u: predict_disagg(d, Terms(), u, 1024, 256).ttft_parts_ms or {} for u in (1, 32)}
    busy, alone = out["sglang"][32], out["sglang"][1]
    assert busy["prealloc"] == pytest.approx(busy["handoff"], rel=1e-9) and busy["prealloc"] > 0
    assert alone["prealloc"] == pytest.approx(alone["handoff"], rel=1e-9) and alone["prealloc"] < 0.1 * busy["prealloc"]
    assert out["vllm"][32]["prealloc"] == 0 < out["vllm"][32]["handoff"]


def test_bad_input(hw: HardwareProfile, minimax: ModelArch) -> None:
    with pytest.raises(AdvisorError, match="at least one of each"):
        make_disagg(minimax, hw, Plan(tp=4), 0, Plan(tp=4), 1, Settings())
    with pytest.raises(AdvisorError, match="trtllm offers default, ucx, nixl, mpi"):
        make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 1, Settings(engine="trtllm"), backend="mooncake")
    with pytest.raises(AdvisorError, match="one engine"):
        make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 1, Settings(), Settings(engine="sglang"))
    with pytest.raises(AdvisorError, match="same KV dtype"):
        make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 1, Settings(), Settings(kv_cache_dtype="fp8"))
    assert make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 1, Settings(), backend="NixlConnector").runs
    over = make_disagg(minimax, hw, Plan(tp=4), 1, Plan(tp=4), 2, Settings())
    assert over.refused == "needs 12 GPUs (1 x 4 prefill + 2 x 4 decode), the budget is 8"
    assert predict_disagg(over, Terms(), 8, 1024, 1024).ttft_ms is None
    small = make_disagg(minimax, hw, Plan(tp=2), 1, Plan(tp=4), 1, Settings())
    assert small.refused is not None and small.refused.startswith("prefill TP2: weights")
    nxt = catalog_arch("Qwen/Qwen3-Next-80B-A3B-Thinking")
    hetero = make_disagg(nxt, hw, Plan(tp=2), 1, Plan(tp=4), 1, Settings())
    assert hetero.refused is not None and "same TP on both sides" in hetero.refused
    assert make_disagg(nxt, hw, Plan(tp=2), 1, Plan(tp=2), 1, Settings()).refused is None


def test_sglang_reserves_decode_kv_before_the_prefill(hw: HardwareProfile, llama8: ModelArch) -> None:
    """SGLang pre-allocates a request's KV on the decode side before its prefill runs, vLLM when its pull starts:
    at the same load SGLang's decode has less room for running requests."""
    from advisor.cost.disagg_predict import combos_of
    from advisor.cost.disagg_serving import decode_side, prefill_side, solve

    room = {}
    for engine in ("vllm", "sglang"):
        d = make_disagg(llama8, hw, Plan(tp=1), 1, Plan(tp=1), 1, Settings(engine=engine))
        sol = solve(prefill_side([d.prefill.case], Terms(), 32768), decode_side([d.decode.case], Terms(), 32768, 512),
                    combos_of([d], 32768, [0], [0]), engine)
        room[engine] = (sol["room"][0], sol["b"][0], float(d.decode.case.memory.gpu_kv_cache_tokens))  # type: ignore
    for engine, (r, b, _) in room.items():
        assert np.all(r[b >= 1] <= r[0] + 1e-9), engine  # room shrinks as load grows
    assert np.mean(room["sglang"][0][room["sglang"][1] >= 1]) < np.mean(room["vllm"][0][room["vllm"][1] >= 1])


def test_benchmark_first_round_waits_for_the_wave(hw: HardwareProfile, llama8: ModelArch) -> None:
    """A closed-loop benchmark releases every user at once: with all of its requests in that wave
    (`bench_wave_share` 1) the mean prompt waits for half the wave's prompts on its prefill rank; TPOT is the
    steady decode pool's."""
    d = make_disagg(llama8, hw, Plan(tp=1), 2, Plan(tp=1), 2, Settings())
    waves = Terms(bench_wave_share=1.0)
    steady = predict_disagg(d, waves, 32, 8192, 256)
    bench = predict_disagg(d, waves, 32, 8192, 256, benchmark=True)
    assert bench.tpot_ms == steady.tpot_ms
    assert sum((bench.ttft_parts_ms or {}).values()) == pytest.approx(bench.ttft_ms, rel=1e-9)
    # 32 prompts of 8,192 tokens over 2 ranks with an 8,192-token budget: 16 steps, the mean prompt done at 8.5
    one = predict_disagg(d, waves, 1, 8192, 256)  # one prompt alone: one full-budget step
    wave = (bench.ttft_parts_ms or {})["prefill_wait"] + (bench.ttft_parts_ms or {})["prefill"]
    assert d.prefill.case.args.max_num_batched_tokens == 8192
    assert wave == pytest.approx(8.5 * (one.ttft_parts_ms or {})["prefill"], rel=0.01)
    assert bench.ttft_ms > steady.ttft_ms
