"""`--weight-dtype` re-quantization and per-GPU weight bytes (advisor/cost/weights.py) against vLLM quant methods
(what each checkpoint format keeps in BF16) and the real ModelOpt/compressed-tensors checkpoints."""

from __future__ import annotations

import pytest

from advisor.arch.model import ModelArch, WeightGroup
from advisor.catalog import lookup
from advisor.cost.plan import Plan
from advisor.cost.weights import per_gpu_bytes, requantize, weights_per_gpu

KIMI = "moonshotai/Kimi-K2.5"
LLAMA70 = "meta-llama/Llama-3.1-70B"


def arch(model: str) -> ModelArch:
    entry = lookup(model)
    assert entry is not None, model
    return entry.arch


def fmts(weights: tuple[WeightGroup, ...]) -> dict[str, str]:
    return {w.name: w.fmt for w in weights}


def total(weights: tuple[WeightGroup, ...]) -> float:
    return sum(w.bytes for w in weights)


def test_none_keeps_checkpoint() -> None:
    k = arch(KIMI)
    assert requantize(k, None) == k.weights


def test_nvfp4_on_kimi_keeps_attention_bf16_and_makes_experts_nvfp4() -> None:
    got = fmts(requantize(arch(KIMI), "nvfp4"))
    assert got["attn"] == "bf16" and got["attn_replicated"] == "bf16"
    assert got["routed_experts"] == "nvfp4" and got["shared_experts"] == "nvfp4"
    assert got["embed"] == "bf16" and got["lm_head"] == "bf16" and got["router"] == "bf16"


def test_nvfp4_on_kimi_matches_nvidias_checkpoint() -> None:
    # nvidia/Kimi-K2.5-NVFP4 (ModelOpt; excludes self_attn and lm_head, vLLM quant methods) read from its config
    nvidia = arch("nvidia/Kimi-K2.5-NVFP4")
    assert fmts(requantize(arch(KIMI), "nvfp4")) == fmts(nvidia.weights)
    assert total(requantize(arch(KIMI), "nvfp4")) == pytest.approx(nvidia.weight_bytes, rel=1e-9)


def test_nvfp4_on_a_dense_model_quantizes_attention_too() -> None:
    # NVIDIA's dense NVFP4 exports keep only lm_head at full precision: the Hub counts 41B safetensors elements
    # for nvidia/Llama-3.3-70B-Instruct-NVFP4 (FP4 packed two per U8, one FP8 scale per 16, BF16 embed/lm_head)
    got = requantize(arch(LLAMA70), "nvfp4")
    assert fmts(got)["attn"] == "nvfp4" and fmts(got)["dense_mlp"] == "nvfp4" and fmts(got)["lm_head"] == "bf16"
    elements = sum(w.params * (0.5 + 1 / 16) if w.fmt == "nvfp4" else w.params for w in got if w.name != "norms")
    assert elements / 1e9 == pytest.approx(41, abs=0.5)


def test_the_catalogs_qwen3_32b_nvfp4_is_every_linear_layer_in_fp4() -> None:
    # its byte-identical mirror's card: all Linear layers NVFP4, lm_head full precision, FP8 KV; the Hub counts
    # 19B safetensors elements for an export of it (BF16 attention would make 21.8B)
    a = arch("nvidia/Qwen3-32B-NVFP4")
    assert fmts(a.weights)["attn"] == "nvfp4" and a.kv_dtype == "fp8"
    elements = sum(w.params * (0.5 + 1 / 16) if w.fmt == "nvfp4" else w.params for w in a.weights)
    assert elements / 1e9 == pytest.approx(19, abs=0.5)
    assert fmts(requantize(arch("Qwen/Qwen3-32B"), "nvfp4")) == fmts(a.weights)


def test_fp8_on_bf16_model_roughly_halves_bytes() -> None:
    llama = arch(LLAMA70)
    assert llama.weight_dtype == "bf16"
    ratio = total(requantize(llama, "fp8")) / llama.weight_bytes
    # embed + lm_head (3% of params) stay BF16; the rest goes to 1.000244 bytes
    assert 0.5 < ratio < 0.53
    got = fmts(requantize(llama, "fp8"))
    assert got["attn"] == "fp8-block" and got["dense_mlp"] == "fp8-block"
    assert got["embed"] == "bf16" and got["norms"] == "bf16"


def test_int4_on_kimi_is_unchanged() -> None:
    # Kimi-K2.5 already stores routed experts INT4 g32 and everything else BF16 (compressed-tensors ignore list)
    k = arch(KIMI)
    again = requantize(k, "int4")
    assert fmts(again) == fmts(k.weights)
    assert total(again) == pytest.approx(k.weight_bytes, rel=1e-12)


def test_int4_on_dense_model_is_g128_everywhere() -> None:
    got = fmts(requantize(arch(LLAMA70), "int4"))
    assert got["attn"] == "int4-g128" and got["dense_mlp"] == "int4-g128" and got["lm_head"] == "bf16"


def test_bf16_on_kimi_restores_full_size() -> None:
    k = arch(KIMI)
    bf16 = total(requantize(k, "bf16"))
    assert bf16 == pytest.approx(2 * k.total_params, rel=1e-9)
    # Kimi-K2.5 (1.03 T params) INT4 experts: ~0.29 of BF16 size (0.5625 / 2 on 98% of params)
    assert 0.28 < k.weight_bytes / bf16 < 0.31


def test_requantize_keeps_parameter_count() -> None:
    for model in (KIMI, LLAMA70, "MiniMaxAI/MiniMax-M2.5", "openai/gpt-oss-120b"):
        a = arch(model)
        for dtype in ("bf16", "fp8", "int4", "nvfp4", "mxfp4"):
            assert sum(w.params for w in requantize(a, dtype)) == a.total_params


def test_per_gpu_bytes_sharding() -> None:
    k = arch(KIMI)
    by = {w.name: w for w in k.weights}
    tp8, ep8 = Plan(tp=8), Plan(tp=8, ep=8)
    assert per_gpu_bytes(by["attn"], tp8) == pytest.approx(by["attn"].bytes / 8)
    assert per_gpu_bytes(by["attn_replicated"], tp8) == by["attn_replicated"].bytes  # MLA q_a/kv_a replicated
    assert per_gpu_bytes(by["embed"], tp8) == pytest.approx(by["embed"].bytes / 8)
    # experts: TP splits each expert 8 ways, EP places 1/8 of the experts: same bytes per GPU
    assert per_gpu_bytes(by["routed_experts"], tp8) == per_gpu_bytes(by["routed_experts"], ep8)
    assert weights_per_gpu(k.weights, tp8) == pytest.approx(weights_per_gpu(k.weights, ep8))


def test_dp_attention_replicates_non_expert_weights() -> None:
    k = arch(KIMI)
    tp8 = weights_per_gpu(k.weights, Plan(tp=8, ep=8))
    dp8 = weights_per_gpu(k.weights, Plan(tp=1, dp=8, ep=8))
    split = sum(w.bytes for w in k.weights if w.shard in ("tp", "vocab"))
    # DP attention (TP1 per rank) holds every TP-split group, vocab included, in full: 7/8 more than TP8
    assert dp8 - tp8 == pytest.approx(split * 7 / 8, rel=1e-6)


def test_pp_end_stage_holds_larger_vocab_matrix() -> None:
    llama = arch(LLAMA70)
    by = {w.name: w for w in llama.weights}
    layers = sum(w.bytes for w in llama.weights if w.shard != "vocab")
    got = weights_per_gpu(llama.weights, Plan(pp=2))
    assert got == pytest.approx(layers / 2 + max(by["embed"].bytes, by["lm_head"].bytes))
