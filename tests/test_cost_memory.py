"""Memory per GPU (advisor/cost/memory.py) vs hand computation from the real config.json files and vLLM's
budget rule (vLLM `kv_cache_interface.py`, `Worker.determine_available_memory`):
    kv_cache = capacity * gpu_memory_utilization - weights - activation peak - overhead,
capacity being what CUDA reports (hwprofiles `cuda_total_bytes`) and the KV pool cut into 16-token blocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import catalog_arch

from advisor.cost.engine_args import resolve
from advisor.cost.memory import MemoryFit, memory_fit
from advisor.cost.plan import Plan
from advisor.cost.weights import requantize
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile

KIMI = "moonshotai/Kimi-K2.5"
MINIMAX = "MiniMaxAI/MiniMax-M2.5"
LLAMA70 = "meta-llama/Llama-3.1-70B"


arch = catalog_arch


def fit(model: str, plan: Plan, hw: HardwareProfile, **settings: Any) -> MemoryFit:
    a = arch(model)
    s = Settings(**settings)
    return memory_fit(a, plan, hw, resolve(s, a, plan, hw), requantize(a, s.weight_dtype))


def config(configs_dir: Path, model: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((configs_dir / (model.replace("/", "--") + ".json")).read_text())
    return data.get("text_config", data)


def test_capacity_is_the_96gb_card(hw: HardwareProfile) -> None:
    # nvidia-smi reports 97,887 MiB on the Server Edition (hwprofiles/rtx-pro-6000-server.toml)
    assert abs(hw.gpu.memory_bytes / 2**20 - 97_887) < 100


def test_llama70b_tp4_by_hand(hw: HardwareProfile, configs_dir: Path) -> None:
    c = config(configs_dir, LLAMA70)
    H, L, inter, V = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    nh, kv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim") or H // nh
    assert not c["tie_word_embeddings"] and c["torch_dtype"] == "bfloat16"
    attn = L * (H * (nh + 2 * kv) * hd + nh * hd * H)  # q, k, v, o
    mlp = L * 3 * H * inter  # gate, up, down
    norms = (2 * L + 1) * H  # two per layer + final (replicated on every rank)
    embed = V * H  # embed_tokens and lm_head, vocab-parallel
    tp = 4
    weights = (attn + mlp) * 2 / tp + norms * 2 + 2 * embed * 2 / tp
    m = fit(LLAMA70, Plan(tp=tp), hw)
    assert m.weights_bytes == pytest.approx(weights, rel=1e-9)
    # GQA: 2 (K and V) * kv/tp heads * head_dim * 2 bytes per layer (vLLM `QKVParallelLinear`)
    assert m.kv_bytes_per_token == 80 * 2 * (8 / 4) * 128 * 2 == L * 2 * (kv / tp) * hd * 2
    assert m.kv_dtype == "bf16"
    # vLLM budget (gpu_worker.py:determine_available_memory), default utilization 0.92 of what CUDA reports
    assert m.capacity_bytes == hw.gpu.cuda_total_bytes
    assert m.budget_bytes == pytest.approx(m.capacity_bytes * 0.92)
    left = m.capacity_bytes * 0.92 - m.weights_bytes - m.activation_bytes - m.overhead_bytes
    assert m.kv_cache_bytes == pytest.approx(left, rel=1e-12)
    # whole 16-token blocks of all 80 layers (kv_cache_utils.py:get_num_blocks)
    assert m.block_size == 16
    assert m.kv_cache_tokens == int(left // (16 * m.kv_bytes_per_token)) * 16
    # default --max-model-len 32768 (Settings): sequences that fit at full length
    assert m.max_model_len == 32768
    assert m.max_concurrency == int(left / (32768 * m.kv_bytes_per_token))
    assert m.fits and m.reason is None
    # activation + overhead are a few GiB on a 96 GB card, not tens (vLLM `Worker.determine_available_memory`)
    assert 0.5 * 2**30 < m.activation_bytes + m.overhead_bytes < 8 * 2**30


def test_gqa_kv_shrinks_with_tp_until_one_head(hw: HardwareProfile) -> None:
    per = {tp: fit(LLAMA70, Plan(tp=tp), hw).kv_bytes_per_token for tp in (1, 2, 4, 8)}
    assert per[1] == 2 * per[2] == 4 * per[4] == 8 * per[8]


def test_mla_kv_is_replicated_across_tp(hw: HardwareProfile, configs_dir: Path) -> None:
    # MLA caches (kv_lora_rank + rope) per layer on every TP rank (vLLM `DeepseekV2MLAAttention`)
    c = config(configs_dir, KIMI)
    tp4 = fit(KIMI, Plan(tp=4), hw)
    tp8 = fit(KIMI, Plan(tp=8), hw)
    assert tp4.kv_bytes_per_token == tp8.kv_bytes_per_token
    assert tp8.kv_bytes_per_token == c["num_hidden_layers"] * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2


def test_minimax_gqa_kv_halves_from_tp4_to_tp8_ep8(hw: HardwareProfile) -> None:
    tp4 = fit(MINIMAX, Plan(tp=4), hw)
    ep8 = fit(MINIMAX, Plan(tp=8, ep=8), hw)
    assert ep8.kv_bytes_per_token == pytest.approx(tp4.kv_bytes_per_token / 2)
    # 62 layers x 2 x (8 KV heads / 8) x 128 x 2 bytes
    assert ep8.kv_bytes_per_token == 62 * 2 * 1 * 128 * 2


def test_lower_gpu_memory_utilization_gives_fewer_kv_tokens(hw: HardwareProfile) -> None:
    hi = fit(LLAMA70, Plan(tp=4), hw)
    lo = fit(LLAMA70, Plan(tp=4), hw, gpu_memory_utilization=0.8)
    assert lo.kv_cache_tokens < hi.kv_cache_tokens
    # the difference is exactly the 12% of (CUDA's) capacity taken out of the budget
    assert hi.kv_cache_bytes - lo.kv_cache_bytes == pytest.approx(0.12 * hi.capacity_bytes, rel=1e-9)
    assert lo.weights_bytes == hi.weights_bytes


def test_fp8_kv_doubles_kv_tokens(hw: HardwareProfile) -> None:
    bf16 = fit(LLAMA70, Plan(tp=4), hw, kv_cache_dtype="bf16")
    fp8 = fit(LLAMA70, Plan(tp=4), hw, kv_cache_dtype="fp8")
    assert fp8.kv_dtype == "fp8" and bf16.kv_dtype == "bf16"
    assert fp8.kv_bytes_per_token == bf16.kv_bytes_per_token / 2
    # twice the tokens, up to the rounding to whole 16-token blocks
    assert abs(fp8.kv_cache_tokens - 2 * bf16.kv_cache_tokens) <= fp8.block_size
    assert fp8.max_concurrency >= 2 * bf16.max_concurrency


@pytest.mark.parametrize("model", ["nvidia/Kimi-K2.5-NVFP4", "nvidia/MiniMax-M2.5-NVFP4"])
def test_modelopt_nvfp4_defaults_to_fp8_kv(hw: HardwareProfile, model: str) -> None:
    # hf_quant_config kv_cache_quant_algo FP8 -> vLLM resolves `auto` to fp8 (vLLM `get_kv_cache_quant_algo_string`)
    plan = Plan(tp=8)
    auto = fit(model, plan, hw)
    assert auto.kv_dtype == "fp8"
    forced = fit(model, plan, hw, kv_cache_dtype="bf16")
    assert auto.kv_bytes_per_token == forced.kv_bytes_per_token / 2


def test_plain_checkpoints_default_to_bf16_kv(hw: HardwareProfile) -> None:
    assert fit(KIMI, Plan(tp=8), hw).kv_dtype == "bf16"
    assert fit("nvidia/DeepSeek-V3-0324-NVFP4", Plan(tp=8), hw).kv_dtype == "bf16"  # no FP8 KV scheme


def test_does_not_fit_reason_names_the_budget(hw: HardwareProfile) -> None:
    m = fit(KIMI, Plan(tp=4), hw)
    assert not m.fits and m.kv_cache_tokens == 0 and m.max_concurrency == 0
    assert m.weights_bytes > m.budget_bytes
    assert m.reason is not None and "budget" in m.reason and "0.92" in m.reason


def test_max_model_len_too_long_for_kv_room(hw: HardwareProfile) -> None:
    # Llama-3.1-70B TP2: ~66 GiB of weights leave room for far fewer than 1M tokens of BF16 KV
    m = fit(LLAMA70, Plan(tp=2), hw, max_model_len=1_000_000)
    assert not m.fits and m.kv_cache_tokens > 0
    assert m.reason is not None and "1000000" in m.reason


def test_dp_multiplies_kv_tokens(hw: HardwareProfile) -> None:
    one = fit(LLAMA70, Plan(tp=4), hw)
    two = fit(LLAMA70, Plan(tp=4, dp=2), hw)
    assert two.kv_cache_tokens == 2 * one.kv_cache_tokens


def test_pp_splits_weights_and_kv(hw: HardwareProfile) -> None:
    tp4 = fit(LLAMA70, Plan(tp=4), hw)
    pp2 = fit(LLAMA70, Plan(tp=4, pp=2), hw)
    assert pp2.kv_bytes_per_token == tp4.kv_bytes_per_token / 2
    assert pp2.weights_bytes < 0.6 * tp4.weights_bytes


def test_weight_dtype_override_changes_fit(hw: HardwareProfile) -> None:
    # Llama-3.1-70B BF16 (141 GB) does not fit one 96 GB GPU; as FP8 (~72 GB) it does
    assert not fit(LLAMA70, Plan(tp=1), hw).fits
    assert fit(LLAMA70, Plan(tp=1), hw, weight_dtype="fp8").fits


def test_sglang_keeps_a_dsa_cache_in_fp8_on_blackwell() -> None:
    """SGLang v0.5.5-v0.5.10 `server_args.py: _set_default_nsa_kv_cache_dtype`: a DSA model's `auto` cache is
    fp8_e4m3 on compute capability >= 10, bf16 below; other MLA models keep the checkpoint's dtype."""
    from advisor.hardware import load_profile

    b200, h100 = load_profile("b200-sxm"), load_profile("h100-sxm")
    glm = "zai-org/GLM-5"
    assert fit(glm, Plan(tp=8), b200, engine="sglang").kv_dtype == "fp8"
    assert fit(glm, Plan(tp=8), h100, engine="sglang").kv_dtype == "bf16"
    assert fit(glm, Plan(tp=8), b200, engine="vllm").kv_dtype == "bf16"
    assert fit(glm, Plan(tp=8), b200, engine="sglang", kv_cache_dtype="bf16").kv_dtype == "bf16"
    assert fit("deepseek-ai/DeepSeek-R1", Plan(tp=8), b200, engine="sglang").kv_dtype == "bf16"
