"""KV-cache bytes per token (and linear-attention state per sequence) from real configs vs hand arithmetic
(vLLM `QKVParallelLinear` vLLM `kv_cache_interface.py`, `QKVParallelLinear`, `MLAAttention.get_kv_cache_spec`,
`mamba_utils.py:gated_delta_net_state_shape`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.arch.local import read_json_file
from advisor.arch.model import ModelArch
from advisor.arch.reader import read_config

KIB = 1024
MIB = 1024 * 1024


def arch(configs_dir: Path, file: str) -> ModelArch:
    side = configs_dir / "_sidecars" / file.replace(".json", ".hf_quant_config.json")
    return read_config(read_json_file(configs_dir / file), name=file,
                       sidecar=read_json_file(side) if side.exists() else None)


def test_minimax_m25_gqa(configs_dir: Path) -> None:
    a = arch(configs_dir, "MiniMaxAI--MiniMax-M2.5.json")
    # 62 layers * 2 (K,V) * 8 KV heads * head_dim 128 * 2 B (BF16) = 253,952 B = 248 KiB
    assert a.kv_dtype == "bf16"
    assert a.kv_bytes_per_token() == 62 * 2 * 8 * 128 * 2 == 253_952
    # TP shards the 8 KV heads: 62 KiB at t=4, 31 KiB at t=8 (halves from 4 to 8)
    assert a.kv_bytes_per_token(4) == 62 * KIB
    assert a.kv_bytes_per_token(8) == 31 * KIB == a.kv_bytes_per_token(4) / 2
    assert a.kv_bytes_per_token(8, kv_bytes=1) == a.kv_bytes_per_token(8) / 2  # FP8 KV halves it


def test_kimi_k25_mla(configs_dir: Path) -> None:
    a = arch(configs_dir, "moonshotai--Kimi-K2.5.json")
    # 61 layers * (kv_lora_rank 512 + qk_rope_head_dim 64) * 2 B = 70,272 B
    assert a.attention == "mla"
    assert a.kv_bytes_per_token() == 61 * 576 * 2 == 70_272
    # the latent is replicated on every TP rank: same bytes per GPU at any TP
    assert a.kv_bytes_per_token(4) == a.kv_bytes_per_token(8) == a.kv_bytes_per_token(1)


def test_deepseek_v3_mla_same_at_tp4_and_tp8(configs_dir: Path) -> None:
    a = arch(configs_dir, "deepseek-ai--DeepSeek-V3.json")
    assert a.kv_bytes_per_token(4) == a.kv_bytes_per_token(8) == 70_272


def test_deepseek_v32_adds_indexer_cache(configs_dir: Path) -> None:
    a = arch(configs_dir, "deepseek-ai--DeepSeek-V3.2.json")
    # per layer: MLA latent 576 * 2 B + DSA indexer 128 fp8 + 128/128 * 4 B scale = 132 B
    # (vLLM `deepseek_v2.py: Indexer`)
    assert a.kv_bytes_per_token() == 61 * (576 * 2 + 132)
    g = a.attn_groups[0]
    assert (g.index_heads, g.index_dim, g.index_topk) == (64, 128, 2048)  # config index_n_heads/_head_dim/_topk


def test_qwen3_235b_replicates_kv_beyond_kv_heads(configs_dir: Path) -> None:
    a = arch(configs_dir, "Qwen--Qwen3-235B-A22B.json")
    # 94 layers * 2 * 4 KV heads * 128 * 2 B = 192,512 B = 188 KiB at t=1
    assert a.kv_bytes_per_token(1) == 94 * 2 * 4 * 128 * 2 == 188 * KIB
    # t=4: one head per rank, 47 KiB; t=8: 4 heads < 8 ranks -> each rank still holds one head, 47 KiB
    assert a.kv_bytes_per_token(4) == 47 * KIB
    assert a.kv_bytes_per_token(8) == 47 * KIB


def test_llama31_70b(configs_dir: Path) -> None:
    a = arch(configs_dir, "meta-llama--Llama-3.1-70B.json")
    # 80 layers * 2 * 8 KV heads * 128 * 2 B = 320 KiB at t=1, 40 KiB at t=8 (vLLM `QKVParallelLinear`)
    assert a.kv_bytes_per_token(1) == 320 * KIB
    assert a.kv_bytes_per_token(8) == 40 * KIB


def test_gpt_oss_full_layers_only_and_window_cap(configs_dir: Path) -> None:
    a = arch(configs_dir, "openai--gpt-oss-120b.json")
    # 18 full-attention layers grow with context: 18 * 2 * 8 * 64 * 2 B = 36,864 B = 36 KiB at t=1
    assert a.kv_bytes_per_token(1) == 18 * 2 * 8 * 64 * 2 == 36 * KIB
    assert a.kv_bytes_per_token(8) == 4.5 * KIB
    # the other 18 are sliding (window 128): capped at 128 tokens per sequence
    assert a.layer_kinds["sliding_attention"] == 18 and a.layer_kinds["full_attention"] == 18
    assert a.window_kv_bytes_per_seq(1) == 18 * 2 * 8 * 64 * 2 * 128


@pytest.mark.parametrize(("file", "kv"), [("nvidia--Kimi-K2.5-NVFP4.json", "fp8"),
                                          ("nvidia--MiniMax-M2.5-NVFP4.json", "fp8"),
                                          ("nvidia--DeepSeek-V3-0324-NVFP4.json", "bf16"),
                                          ("nvidia--Llama-3.1-70B-Instruct-FP8.json", "fp8"),
                                          ("moonshotai--Kimi-K2.5.json", "bf16")])
def test_default_kv_dtype(configs_dir: Path, file: str, kv: str) -> None:
    """ModelOpt kv_cache_quant_algo FP8 / kv_cache_scheme 8-bit float make vLLM's `auto` resolve to fp8
    (vLLM `get_kv_cache_quant_algo_string`); DeepSeek-V3-0324-NVFP4's sidecar has kv_cache_quant_algo null -> bf16."""
    a = arch(configs_dir, file)
    assert a.kv_dtype == kv
    bf16 = a.kv_bytes_per_token(1, kv_bytes=2)
    assert a.kv_bytes_per_token(1) == (bf16 / 2 if kv == "fp8" else bf16)


def test_nvfp4_kimi_kv_is_half_of_bf16_kimi(configs_dir: Path) -> None:
    assert arch(configs_dir, "nvidia--Kimi-K2.5-NVFP4.json").kv_bytes_per_token() == 61 * 576 * 1


def test_qwen3_next_gdn_state_and_full_layers(configs_dir: Path) -> None:
    a = arch(configs_dir, "Qwen--Qwen3-Next-80B-A3B-Thinking.json")
    # GDN per layer per sequence (n_k 16, n_v 32, d_k = d_v 128, conv kernel 4):
    #   ssm 32 * 128 * 128 = 524,288 elements -> 1 MiB BF16
    #   conv (2*16*128 + 32*128) * (4 - 1) = 24,576 elements -> 48 KiB BF16
    per_layer = (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3) * 2
    assert per_layer == 1 * MIB + 48 * KIB
    assert a.state_bytes_per_seq(1) == 36 * per_layer  # 37.69 MiB for 36 GDN layers
    assert a.state_bytes_per_seq(1) / MIB == pytest.approx(37.7, abs=0.05)
    assert a.state_bytes_per_seq(4) == a.state_bytes_per_seq(1) / 4  # heads split by TP
    # 12 full-attention layers, 2 KV heads of 256: 24 KiB/token at t=1, 12 KiB at every t >= 2
    assert a.kv_bytes_per_token(1) == 12 * 2 * 2 * 256 * 2 == 24 * KIB
    assert a.kv_bytes_per_token(2) == a.kv_bytes_per_token(8) == 12 * KIB
