"""The 2026-12 configs (tests/data/configs/INDEX.md, second table) read from their fields: hybrid Mamba with
LatentMoE (Nemotron-3), Kimi Delta Attention + LatentMoE (Kimi-K3), compressed sparse attention with
hyper-connections (DeepSeek-V4), ModelOpt MIXED_PRECISION per-layer formats, renamed keys. Published counts are
checked for every catalog model by tests/test_arch_counts.py (facts.toml ranges); these tests pin the shapes by
hand (Nemotron-NAS `block_configs` too) and the blocks the reader refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.arch.fields import ConfigError
from advisor.arch.local import read_json_file
from advisor.arch.model import ModelArch
from advisor.arch.reader import read_config

CONFIGS = Path(__file__).resolve().parent / "data" / "configs"
B = 1e9


def read(file: str) -> ModelArch:
    path = CONFIGS / file
    side = CONFIGS / "_sidecars" / file.replace(".json", ".hf_quant_config.json")
    return read_config(read_json_file(path), name=file, where=str(path),
                       sidecar=read_json_file(side) if side.exists() else None)


def formats(a: ModelArch) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for w in a.weights:
        out.setdefault(w.name, set()).add(w.fmt)
    return out


def test_nemotron3_super_latent_moe_by_hand() -> None:
    """88 blocks "MEMEMEM*E...": 40 mamba, 40 LatentMoE, 8 attention. Experts run at the latent width 1024:
    512 experts x 2 (relu2: up, down) x 1024 x 2688 per layer; the shared expert stays at H 4096: 2 x 4096 x
    5376; latent down/up 2 x 4096 x 1024. Was read as 458B (experts at H)."""
    a = read("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json")
    assert a.group_params("routed_experts") == 40 * 512 * 2 * 1024 * 2688
    assert a.group_params("shared_experts") == 40 * 2 * 4096 * 5376
    assert a.group_params("moe_latent") == 40 * 2 * 4096 * 1024
    assert a.layer_kinds == {"full_attention": 8, "mamba": 40, "moe_mlp": 40, "dense_mlp": 0}
    # 120B total / 12B active (facts.toml): 120.67B and 12.23B without the input embedding
    assert 115 * B <= a.total_params < 125 * B and 11.5 * B <= a.active_params_excl_embedding < 12.5 * B
    assert a.weight_dtype == "fp8" and a.kv_dtype == "fp8"  # sidecar: FP8 weights and KV


def test_nemotron3_ultra_without_num_hidden_layers() -> None:
    """`layers_block_type` (the list form of hybrid_override_pattern) names all 108 blocks."""
    a = read("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4.json")
    assert a.num_layers == 108
    assert a.layer_kinds["mamba"] == 48 and a.layer_kinds["moe_mlp"] == 48 and a.layer_kinds["full_attention"] == 12
    assert a.mtp_layers == 1  # mtp_layers_block_type: attention + moe
    assert 545 * B <= a.total_params < 555 * B and 54.5 * B <= a.active_params_excl_embedding < 55.5 * B


def test_kimi_k3_kda_mla_latent_moe() -> None:
    """`linear_attn_config`: 69 KDA layers and 24 MLA layers (1-based lists); `num_experts_per_token` (renamed
    key) 16 of 896 experts at `routed_expert_hidden_size` 3584; MXFP4 compressed-tensors (float 4-bit, group 32)."""
    a = read("moonshotai--Kimi-K3.json")
    assert a.moe is not None and (a.moe.num_experts, a.moe.experts_per_token) == (896, 16)
    assert a.layer_kinds["linear_attention"] == 69 and a.layer_kinds["mla_attention"] == 24
    assert a.group_params("routed_experts") == 92 * 896 * 3 * 3584 * 3072
    f = formats(a)
    assert f["routed_experts"] == {"mxfp4"} and f["linear_attn"] == {"bf16"} and f["attn"] == {"bf16"}
    assert f["shared_experts"] == {"bf16"}  # ignore: re:.*shared_experts.*


def test_deepseek_v4_compressed_attention() -> None:
    """compress_ratios (44 entries: 43 layers + the MTP layer): 2 window-only layers, 21 ratio-4 (with indexer),
    20 ratio-128; experts MXFP4 from `expert_dtype` fp4, the rest block-FP8."""
    a = read("deepseek-ai--DeepSeek-V4-Flash.json")
    groups = sorted((g.kv_compress, g.layers, g.window, g.index_topk) for g in a.attn_groups)
    assert groups == [(1, 2, 128, 0), (4, 21, None, 512), (128, 20, None, 0)]
    # KV per token at TP1, bf16: one 512-wide entry per 4 (+ 132 B index key per 4) or per 128 tokens
    assert a.kv_bytes_per_token() == pytest.approx(21 * (512 * 2 + 132) / 4 + 20 * 512 * 2 / 128)
    f = formats(a)
    assert f["routed_experts"] == {"mxfp4"} and f["attn"] == {"fp8-block"} and f["lm_head"] == {"bf16"}
    # card: 284B total, 13B activated (13.27B without the input embedding)
    assert 283.5 * B <= a.total_params < 284.5 * B and 12.5 * B <= a.active_params_excl_embedding < 13.5 * B


def test_deepseek_v4_nvfp4_per_layer_experts() -> None:
    """quant_method fp8 + ModelOpt MIXED_PRECISION `quantized_layers` (layers.N.ffn.experts: NVFP4)."""
    f = formats(read("nvidia--DeepSeek-V4-Flash-NVFP4.json"))
    assert f["routed_experts"] == {"nvfp4"} and f["attn"] == {"fp8-block"} and f["lm_head"] == {"bf16"}


@pytest.mark.parametrize(("file", "expect"), [
    # Qwen3.6: attention and linear attention FP8, MoE and shared experts NVFP4, lm_head W4A16_NVFP4
    ("nvidia--Qwen3.6-35B-A3B-NVFP4.json", {"attn": "fp8", "linear_attn": "fp8", "routed_experts": "nvfp4",
                                            "shared_experts": "nvfp4", "lm_head": "nvfp4", "embed": "bf16"}),
    # MiniMax-M3: MXFP8 attention, index projections, dense MLP and shared experts; NVFP4 experts
    ("nvidia--MiniMax-M3-NVFP4.json", {"attn": "mxfp8", "indexer": "mxfp8", "dense_mlp": "mxfp8",
                                       "shared_experts": "mxfp8", "routed_experts": "nvfp4", "lm_head": "bf16"}),
    # Nemotron-3.5 Lightning (sidecar): mamba FP8, experts W4A16_NVFP4, attention not listed -> BF16
    ("nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4.json", {"mamba": "fp8", "routed_experts": "nvfp4",
                                                                   "attn": "bf16"}),
])
def test_modelopt_mixed_precision(file: str, expect: dict[str, str]) -> None:
    f = formats(read(file))
    assert {k: f[k] for k in expect} == {k: {v} for k, v in expect.items()}


def test_glm52_shared_indexers_carry_no_weights() -> None:
    """GLM-5.2 `indexer_types`: 21 "full" layers own an indexer, 57 "shared" reuse the previous one's top-k;
    `layer_types` deepseek_sparse_attention and `mlp_layer_types` dense/sparse (renamed keys)."""
    a52, a51 = read("zai-org--GLM-5.2.json"), read("zai-org--GLM-5.1.json")
    per_indexer = a51.group_params("indexer") // 78
    assert a52.group_params("indexer") == 21 * per_indexer
    assert a52.layer_kinds == a51.layer_kinds == {"mla_attention": 78, "moe_mlp": 75, "dense_mlp": 3}


def test_gemma4_nvfp4_experts_beside_the_mlp() -> None:
    """`enable_moe_block`: experts sit beside the dense MLP (`layers.N.experts`), so the exclude list's
    `layers.N.mlp*` keeps the MLP BF16 and leaves the experts NVFP4 (were read BF16)."""
    f = formats(read("nvidia--Gemma-4-26B-A4B-NVFP4.json"))
    assert f["routed_experts"] == {"nvfp4"} and f["dense_mlp"] == {"bf16"} and f["attn"] == {"bf16"}


def test_modelopt_scheme_without_quant_method() -> None:
    """Qwen3-32B-FP8-Static-PerTensor: config.json holds ModelOpt's scheme with no quant_method."""
    a = read("Qwen--Qwen3-32B-FP8-Static-PerTensor.json")
    assert formats(a)["attn"] == {"fp8"} and a.kv_dtype == "fp8"


def test_nemotron_nas_block_configs_by_hand() -> None:
    """Llama-3.3-Nemotron-Super-49B's 80 `block_configs`: 49 GQA layers of 64/8 = 8 KV heads, 31 without
    attention, FFN widths int(2 x mult x 8192 / 3) up to a multiple of 256 (vLLM `nemotron_nas.py`):
    48 x 5.25 and one more (28,672), 2.625 x 6 (14,336), 1.3125 x 10 (7,168), 1.0 x 8 (5,461 -> 5,632),
    0.5 x 6 (2,730 -> 2,816), 3.28125 x 1 (17,920)."""
    a = read("nvidia--Llama-3_3-Nemotron-Super-49B-v1.json")
    assert [(g.kind, g.layers, g.kv_heads, g.head_dim) for g in a.attn_groups] == [("full", 49, 8, 128)]
    assert a.kv_bytes_per_token(1, 2) == 49 * 2 * 8 * 128 * 2
    widths = 49 * 28672 + 6 * 14336 + 10 * 7168 + 8 * 5632 + 6 * 2816 + 17920
    assert a.group_params("dense_mlp") == 3 * 8192 * widths and a.dense_mlp_layers == 80
    assert a.group_params("attn") == 49 * (2 * 8192 * 8192 + 2 * 8192 * 1024)
    assert a.total_params == 3 * 8192 * widths + 49 * (2 * 8192 * 8192 + 2 * 8192 * 1024) \
        + 2 * 128256 * 8192 + (49 + 80 + 1) * 8192  # 49.87B
    assert a.mlp_intermediate == 28672 and a.attention == "gqa" and a.num_kv_heads == 8


@pytest.mark.parametrize(("block", "match"), [
    ({"attention": {"no_op": False, "n_heads_in_group": 8, "replace_with_linear": True}, "ffn": {"ffn_mult": 1.0}},
     "replace_with_linear"),
    ({"attention": {"no_op": False, "n_heads_in_group": 7}, "ffn": {"ffn_mult": 1.0}}, "does not divide"),
    ({"attention": {"no_op": True}, "ffn": {"ffn_mult": "wide"}}, "ffn_mult"),
    ({"attention": {"no_op": True}}, "missing required field 'ffn'"),
])
def test_nemotron_nas_blocks_the_engine_does_not_build_are_refused(block: dict, match: str) -> None:
    raw = read_json_file(CONFIGS / "nvidia--Llama-3_3-Nemotron-Super-49B-v1.json")
    raw["block_configs"] = [block] * 79 + [raw["block_configs"][0]]
    with pytest.raises(ConfigError, match=match):
        read_config(raw, name="nas")
    raw["block_configs"] = raw["block_configs"][:3]
    with pytest.raises(ConfigError, match="3 entries for 80 layers"):
        read_config(raw, name="nas")
