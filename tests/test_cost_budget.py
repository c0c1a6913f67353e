"""The engine's memory budget term by term (advisor/cost/budget.py) against hand computation from the vLLM and
SGLang code the terms follow, per release (advisor/engines.py)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import catalog_arch

from advisor.cost.budget import (
    CUDA_CONTEXT_BYTES,
    FITTED,
    NCCL_INIT_PEER_BYTES,
    forward_bytes,
    peers,
    sampler_bytes,
    vllm_budget,
)
from advisor.cost.engine_args import batch_limits, resolve
from advisor.cost.engine_defaults import capture_sizes, sglang_fraction
from advisor.cost.memory import MemoryFit, memory_fit
from advisor.cost.plan import Plan
from advisor.cost.weights import requantize, weights_per_gpu
from advisor.cost.workload import Settings
from advisor.engines import release
from advisor.hardware import HardwareProfile, load_profile

GiB = 2**30
MINIMAX = "MiniMaxAI/MiniMax-M2.5"
KIMI = "moonshotai/Kimi-K2.5"
LLAMA8 = "meta-llama/Llama-3.1-8B"


def fit(model: str, plan: Plan, hw: HardwareProfile, **settings: Any) -> MemoryFit:
    a = catalog_arch(model)
    s = Settings(**settings)
    return memory_fit(a, plan, hw, resolve(s, a, plan, hw), requantize(a, s.weight_dtype))


@pytest.mark.parametrize(("version", "util", "sampler", "graphs", "printed"), [
    ("0.11.0", 0.9, "sort", False, "blocks"), ("0.16", 0.9, "sort", False, "blocks"),
    ("0.17.1", 0.9, "triton", False, "blocks"), ("0.19.1", 0.9, "triton", False, "blocks"),
    ("0.20.0", 0.92, "triton", True, "blocks"), ("0.22", 0.92, "triton", True, "concurrency"),
    ("0.30.0", 0.92, "v2", True, "concurrency"), ("0.33.0", 0.92, "v2", True, "concurrency"),
])
def test_release_defaults(version: str, util: float, sampler: str, graphs: bool, printed: str) -> None:
    # config/cache.py gpu_memory_utilization 0.9 -> 0.92 at v0.20.0; CUDA-graph estimate default on from v0.20.0
    r = release("vllm", version)
    assert (r.gpu_memory_utilization, r.sampler, r.graph_estimate, r.printed) == (util, sampler, graphs, printed)
    a = catalog_arch(LLAMA8)
    hw = load_profile("rtx-pro-6000-server")
    assert resolve(Settings(engine_version=version), a, Plan(), hw).gpu_memory_utilization == util


@pytest.mark.parametrize("version", ["0.10.2", "0.34.0", "1.0", "latest"])
def test_unmodelled_releases_are_refused(version: str) -> None:
    with pytest.raises(ValueError, match="not a modelled vllm release"):
        release("vllm", version)


def test_default_release_is_the_newest_modelled() -> None:
    assert release("vllm").name == "0.30-0.33" and Settings().release().last == 33


def test_batch_defaults_by_device_and_release(hw: HardwareProfile) -> None:
    # engine/arg_utils.py: >= 70 GiB and not A100 -> 8192 / 1024; from v0.30 >= 160 GiB -> 16384 / 1024
    assert batch_limits(Settings(), hw)[:2] == (8192, 1024)
    b200 = load_profile("b200-sxm")
    assert batch_limits(Settings(), b200)[:2] == (16384, 1024)
    assert batch_limits(Settings(engine_version="0.29"), b200)[:2] == (8192, 1024)
    assert batch_limits(Settings(), load_profile("a100-sxm"))[:2] == (2048, 256)


def test_sampler_bytes_per_element() -> None:
    # bf16 logits 2 + fp32 copy 4; sort: values 4 + int64 indices 8 + fitted temporaries; triton: softmax,
    # exponential noise and probs.div 3 x 4; V2 runner: in place, plus the penalties' int32 bin counts
    rows, vocab = 1024, 200064
    assert sampler_bytes(rows, vocab, "sort") == rows * vocab * (18 + FITTED.sort_temp_bytes)
    assert sampler_bytes(rows, vocab, "triton") == rows * vocab * 18
    assert sampler_bytes(rows, vocab, "v2") == rows * vocab * 10


def test_sampler_rows_are_min_of_max_num_seqs_and_batched_tokens(hw: HardwareProfile) -> None:
    a = catalog_arch(LLAMA8)
    w = weights_per_gpu(requantize(a, None), Plan())
    s = Settings(engine_version="0.11", max_num_seqs=4096, max_num_batched_tokens=2048, max_model_len=32768)
    b = vllm_budget(a, Plan(), hw, resolve(s, a, Plan(), hw), w)
    assert b.sampler == sampler_bytes(2048, a.vocab_size, "sort")


def test_moe_forward_is_the_fused_expert_caches(hw: HardwareProfile) -> None:
    # fused_moe.py:fused_experts_impl, MiniMax-M2.5 TP4 at 8192 tokens: N = 2 x 1536 / 4 = 768, K = 3072, top-8:
    # cache13 8 x max(N, K) + cache2 8 x N/2 + router 2 x 256 (fp32) elements per token, bf16; plus hidden + residual
    a = catalog_arch(MINIMAX)
    per_token = 2 * 3072 + 8 * (3072 + 384) + 2 * 256
    assert forward_bytes(a, Plan(tp=4), 8192) == 8192 * per_token * 2
    # with EP the experts are whole: N = 2 x 1536
    per_ep = 2 * 3072 + 8 * (3072 + 1536) + 2 * 256
    assert forward_bytes(a, Plan(tp=4, ep=4), 8192) == 8192 * per_ep * 2


def test_dsa_models_keep_the_indexer_workspace(hw: HardwareProfile) -> None:
    # indexer.py:get_max_prefill_buffer_size: 40 x max_model_len entries of 132 bytes, held through the sampler
    m = fit("zai-org/GLM-5", Plan(tp=8), hw, weight_dtype="nvfp4", max_model_len=202752)
    assert m.budget.persistent == 40 * 202752 * 132 + 2**20
    assert m.budget.activation == pytest.approx(
        max(m.budget.forward, m.budget.sampler + 8192 * 6144 * 2) + m.budget.persistent)


def test_non_torch_grows_with_nccl_peers(hw: HardwareProfile) -> None:
    a = catalog_arch(MINIMAX)
    assert [peers(a, p) for p in (Plan(), Plan(tp=4), Plan(tp=8, ep=8), Plan(tp=4, pp=2), Plan(tp=2, dp=4, ep=8))] \
        == [0, 3, 7, 4, 1 + 7]
    m1, m8 = fit(LLAMA8, Plan(), hw), fit(LLAMA8, Plan(tp=8), hw)
    assert m1.budget.non_torch == FITTED.non_torch_base_bytes
    assert m8.budget.non_torch - m1.budget.non_torch == pytest.approx(7 * FITTED.nccl_peer_bytes)
    assert m8.budget.pre_snapshot == CUDA_CONTEXT_BYTES + 7 * NCCL_INIT_PEER_BYTES


def test_capture_sizes_follow_the_release(hw: HardwareProfile) -> None:
    # config/vllm.py:_set_cudagraph_sizes: [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)
    r = release("vllm", "0.33")
    assert capture_sizes(1024, 8192, r, "sm120") == [1, 2, 4, *range(8, 256, 8), *range(256, 513, 16)]
    assert capture_sizes(64, 8192, r, "sm120")[-1] == 128
    assert capture_sizes(1024, 8192, r, "sm100")[-1] == 1024  # data-center Blackwell from v0.30
    assert capture_sizes(1024, 8192, release("vllm", "0.29"), "sm100")[-1] == 512


def test_graph_estimate_only_where_the_release_subtracts_it(hw: HardwareProfile) -> None:
    new, old = fit(MINIMAX, Plan(tp=4), hw), fit(MINIMAX, Plan(tp=4), hw, engine_version="0.19")
    assert new.budget.cudagraph > 0 and old.budget.cudagraph == 0
    assert fit(MINIMAX, Plan(tp=4), hw, enforce_eager=True).budget.cudagraph == 0
    assert fit(MINIMAX, Plan(tp=4), hw, profile_cuda_graphs=False).budget.cudagraph == 0
    # first capture (the forward of the largest size) + 1 MiB per further graph, 51 piecewise + 51 full
    largest = forward_bytes(catalog_arch(MINIMAX), Plan(tp=4), 512)
    assert new.budget.cudagraph == largest + (50 + 50) * 2**20


def test_sglang_default_fraction_on_the_rtx_box(hw: HardwareProfile) -> None:
    # memory_hook.py: 97,887 MiB -> chunked prefill 8192, decode max_bs 512 at TP4; reserved = 512 + 8192 x 1.5 +
    # 4/8 x 1024 + 512 x 2 + 58 prefill sizes x 8 = 14,800 MiB -> round((97887 - 14800) / 97887, 3)
    a = catalog_arch(MINIMAX)
    assert sglang_fraction(a, Plan(tp=4), hw) == round((97887 - 14800) / 97887, 3)
    # MLA reserves 1.5 GiB of prefill graphs, at TP8 max_bs 512: 512 + 12288 + 1024 + 1024 + 1536
    assert sglang_fraction(catalog_arch(KIMI), Plan(tp=8), hw) == round((97887 - 16384) / 97887, 3)


def test_sglang_kv_is_the_static_fraction_less_weights(hw: HardwareProfile) -> None:
    m = fit(MINIMAX, Plan(tp=4), hw, engine="sglang", gpu_memory_utilization=0.9)
    free_before = hw.gpu.cuda_total_bytes - CUDA_CONTEXT_BYTES - 3 * NCCL_INIT_PEER_BYTES
    assert m.available_kv_bytes == pytest.approx(free_before * 0.9 - m.weights_bytes)
    assert m.gpu_kv_cache_tokens == int(m.available_kv_bytes // m.kv_bytes_per_token)


def test_hybrid_kv_blocks_and_the_printed_tokens_by_release(hw: HardwareProfile) -> None:
    # gpt-oss-120b: 18 full + 18 sliding-window (128) layers -> two groups of 18 sharing one block pool
    # (kv_cache_utils.py:_get_kv_cache_groups_uniform_page_size); page = 16 tokens x 8 KV heads x 64 x 2 (K, V) x 2 B
    page = 16 * 8 * 64 * 2 * 2
    old = fit("openai/gpt-oss-120b", Plan(), hw, engine_version="0.20")
    assert old.num_blocks == int(old.available_kv_bytes // (page * 18))
    assert old.gpu_kv_cache_tokens == old.num_blocks // 2 * 16  # up to v0.21: blocks // groups x block size
    # a request needs cdiv(L, 16) full blocks + cdiv(min(window - 1 + max_num_batched_tokens, L), 16) + 1 sliding
    need = 32768 // 16 + (-(-(127 + 8192) // 16) + 1)
    assert old.concurrency == pytest.approx(old.num_blocks / need)
    new = fit("openai/gpt-oss-120b", Plan(), hw)
    assert new.gpu_kv_cache_tokens == int(new.num_blocks / need * 32768)  # from v0.22: concurrency x L


def test_smaller_pages_get_larger_blocks(hw: HardwareProfile) -> None:
    # gemma-4: full layers hold 2 KV heads x 512 (K only) = 2 KiB per token, sliding ones 8 x 256 x 2 = 8 KiB:
    # the full layers' block grows 4x to unify the page (kv_cache_utils.py:unify_kv_cache_spec_page_size)
    m = fit("google/gemma-4-26B-A4B", Plan(), hw, engine_version="0.20")
    need = 32768 // 64 + 5 * (-(-(1023 + 8192) // 16) + 1)  # 1 full group, 5 sliding groups of 5 layers
    assert m.concurrency == pytest.approx(m.num_blocks / need)
    assert m.block_size == 16 and m.gpu_kv_cache_tokens == m.num_blocks // 6 * 16


def test_trtllm_kv_is_its_fraction_of_what_the_profile_leaves(hw: HardwareProfile) -> None:
    """TensorRT-LLM (`_torch/pyexecutor/_util.py: KvCacheCreator._cal_max_memory`): KV = free_gpu_memory_fraction
    (0.9 by default) x (device total - peak torch memory - memory outside torch), after a profile run of
    max_num_tokens (8192) and with its decode graphs (batch 1-31, 32, 64, 128) captured. The fraction scales
    what is left, so halving it halves the KV exactly (vLLM's share of the device total does not)."""
    a, plan = catalog_arch(MINIMAX), Plan(tp=4)
    w = weights_per_gpu(requantize(a, None), plan)
    m = fit(MINIMAX, plan, hw, engine="trtllm")
    b = m.budget
    assert (b.utilization, m.engine_version) == (0.9, "1.0-1.2")
    assert b.forward == forward_bytes(a, plan, 8192)
    assert b.cudagraph == pytest.approx(forward_bytes(a, plan, 128) + 33 * 2**20)
    pre = CUDA_CONTEXT_BYTES + 3 * NCCL_INIT_PEER_BYTES
    nt = FITTED.non_torch_base_bytes + 3 * FITTED.nccl_peer_bytes
    left = hw.gpu.cuda_total_bytes - w - b.forward - pre - nt - b.cudagraph
    assert m.available_kv_bytes == pytest.approx(0.9 * left)
    half = fit(MINIMAX, plan, hw, engine="trtllm", gpu_memory_utilization=0.45)
    assert half.available_kv_bytes / m.available_kv_bytes == pytest.approx(0.5)
    vllm = [fit(MINIMAX, plan, hw, gpu_memory_utilization=u).available_kv_bytes for u in (0.92, 0.46)]
    assert vllm[1] / vllm[0] < 0.4  # vLLM: weights and activations come out of the halved share


@pytest.mark.parametrize("version", ["0.33", "1.3.0rc1", "2.0"])
def test_unmodelled_trtllm_releases_are_refused(version: str) -> None:
    with pytest.raises(ValueError, match=r"not a modelled trtllm release \(modelled: 1.0-1.2\)"):
        release("trtllm", version)


def test_trtllm_says_what_does_not_fit_in_its_own_terms() -> None:
    """DeepSeek-V3 (671B at FP8) on two B200s: 314 GiB of weights per GPU against the GPU itself, not a vLLM share."""
    b200 = load_profile("b200-sxm")
    m = fit("deepseek-ai/DeepSeek-V3", Plan(tp=2), b200, engine="trtllm")
    assert not m.fits and m.reason is not None
    assert m.reason.startswith("weights 314.0 GiB per GPU alone exceed the 178.4 GiB the GPU has after the CUDA")
    assert fit("deepseek-ai/DeepSeek-V3", Plan(tp=4), b200, engine="trtllm").fits
