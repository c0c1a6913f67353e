"""The collectives of a forward (advisor/cost/collectives.py: counts and payloads per decode step against vLLM's
model files, one allreduce per RowParallel output) and the per-plan features (bytes read per step)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import catalog_arch

from advisor.cost.collectives import SLOTS, Collective, allreduce_summary
from advisor.cost.features import Features, plan_features
from advisor.cost.plan import Plan
from advisor.cost.serving import kv_capacity
from advisor.cost.sweep import make_case
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile

KIMI = "moonshotai/Kimi-K2.5"
MINIMAX = "MiniMaxAI/MiniMax-M2.5"


arch = catalog_arch


def feats(model: str, plan: Plan, hw: HardwareProfile) -> Features:
    case = make_case(arch(model), plan, hw, Settings())
    assert case.invalid is None and case.memory is not None, case.reason
    return Features.stack([plan_features(case.arch, plan, hw, case.args, case.weights, case.memory)])


def colls(model: str, plan: Plan, hw: HardwareProfile) -> tuple[Collective, ...]:
    case = make_case(arch(model), plan, hw, Settings())
    assert case.invalid is None, case.reason
    return case.collectives


def ar_calls(cs: tuple[Collective, ...], slot: str = "tp_hidden") -> int:
    return sum(c.calls for c in cs if c.slot.name == slot)


def test_kimi_tp8_makes_123_allreduces(hw: HardwareProfile) -> None:
    # deepseek_v2.py: o_proj + MoE (or dense down_proj) per layer, 61 layers, + embedding = 61*2+1
    cs = colls(KIMI, Plan(tp=8), hw)
    assert ar_calls(cs) == 61 * 2 + 1 == 123
    assert ar_calls(cs, "tp_tiny") == 0
    causes = {c.cause: c.calls for c in cs}
    assert causes["attention/mixer output projection"] == 61 and causes["MoE final reduce"] == 60
    assert causes["dense MLP down_proj"] == 1 and causes["vocab-parallel embedding"] == 1
    assert causes["logits all-gather"] == 1 and all(c.group == 8 for c in cs)


@pytest.mark.parametrize("plan", [Plan(tp=4), Plan(tp=8, ep=8)])
def test_minimax_makes_187_calls(hw: HardwareProfile, plan: Plan) -> None:
    # minimax_m2.py: QK-norm variance AR ([T,2] fp32) + o_proj + MoE per layer, 62 layers, + embedding.
    # EP with DP=1 keeps the MoE allreduce (vLLM `FusedMoEParallelConfig.make`)
    cs = colls(MINIMAX, plan, hw)
    assert ar_calls(cs) == 124 + 1
    assert ar_calls(cs, "tp_tiny") == 62
    assert allreduce_summary(cs)["calls"] == 187
    assert not any(c.slot.name.startswith("moe_") for c in cs)


@pytest.mark.parametrize("model,calls", [
    ("deepseek-ai/DeepSeek-V3", 123), ("meta-llama/Llama-3.1-70B", 161), ("Qwen/Qwen3-235B-A22B", 189),
])
def test_allreduce_calls_per_step(hw: HardwareProfile, model: str, calls: int) -> None:
    # vLLM `RowParallelLinear`: L x n_AR + 1
    cs = colls(model, Plan(tp=8) if "DeepSeek" in model else Plan(tp=4), hw)
    assert allreduce_summary(cs)["calls"] == calls


def test_allreduce_payload_kimi_vs_minimax(hw: HardwareProfile) -> None:
    # the gap is hidden size (7168 vs 3072), ~2.3x per token; MLA adds no allreduce
    kimi = allreduce_summary(colls(KIMI, Plan(tp=8), hw))["payload_bytes_per_token"]
    minimax = allreduce_summary(colls(MINIMAX, Plan(tp=4), hw))["payload_bytes_per_token"]
    assert kimi == 123 * 7168 * 2 and minimax == 125 * 3072 * 2 + 62 * 8
    assert kimi / minimax == pytest.approx(2.3, abs=0.05)
    # 1.76 MB and 0.77 MB per token per forward (incl. the embedding's 2H)
    assert kimi == pytest.approx(1.76e6, rel=0.01)
    assert minimax == pytest.approx(0.77e6, rel=0.01)


def test_no_collectives_without_tp(hw: HardwareProfile) -> None:
    assert colls("meta-llama/Llama-3.1-8B", Plan(tp=1), hw) == ()


def test_dp_attention_ep_uses_dispatch_combine(hw: HardwareProfile) -> None:
    # vLLM `FusedMoEParallelConfig.make`: DP8 TP1 EP8 has no TP allreduce; each MoE layer dispatches and combines
    k = arch(KIMI)
    assert k.moe is not None
    cs = colls(KIMI, Plan(tp=1, dp=8, ep=8), hw)
    assert allreduce_summary(cs)["calls"] == 0
    by = {c.slot.name: c for c in cs}
    assert by["moe_dispatch"].calls == by["moe_combine"].calls == k.moe.moe_layers
    assert by["moe_dispatch"].group == 8
    assert by["moe_dispatch"].bytes_per_unit == 7168 * 2.0  # INT4 W4A16 experts take BF16 activations
    assert by["dp_sync"].calls == 1 and by["dp_sync"].bytes_per_unit == 16 * 8


def test_block_fp8_dispatch_is_quantized(hw: HardwareProfile) -> None:
    # naive_dp_ep.py:_quantize_and_setup_dispatch: FP8 + one fp32 scale per 128
    by = {c.slot.name: c for c in colls(MINIMAX, Plan(tp=1, dp=8, ep=8), hw)}
    assert by["moe_dispatch"].bytes_per_unit == pytest.approx(3072 * (1 + 4 / 128))


def test_features_carry_the_collective_list(hw: HardwareProfile) -> None:
    # the timing slots are the owner's list summed per slot, nothing recounted
    f = feats(MINIMAX, Plan(tp=4), hw)
    names = [s.name for s in SLOTS]
    assert f.coll_calls[0, names.index("tp_hidden")] == 125 and f.coll_calls[0, names.index("tp_tiny")] == 62
    assert f.coll_bytes[0, names.index("tp_tiny")] == 8 and f.coll_group[0, names.index("tp_hidden")] == 4


def test_dense_weight_bytes_read_per_step(hw: HardwareProfile, configs_dir: Path) -> None:
    # Llama-3.1-8B at TP1 reads every matrix but the embedding table (a gather, not a read) each step
    c = json.loads((configs_dir / "meta-llama--Llama-3.1-8B.json").read_text())
    H, L, inter, V = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    nh, kv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = H // nh
    params = L * (H * (nh + 2 * kv) * hd + nh * hd * H) + L * 3 * H * inter + (2 * L + 1) * H + V * H
    f = feats("meta-llama/Llama-3.1-8B", Plan(tp=1), hw)
    assert f.dense_w_bytes[0] == pytest.approx(params * 2, rel=1e-9)
    assert f.moe_layers[0] == 0 and f.experts[0] == 0


def expert_bytes(f: Features) -> float:
    """One expert's bytes on one GPU (its TP slice): matrices x hidden x width x bytes per weight."""
    return float(f.moe_mats[0] * f.moe_hidden[0] * f.moe_inter[0] * f.moe_b_w[0])


def test_expert_bytes_under_tp_and_ep(hw: HardwareProfile) -> None:
    # TP8 holds 1/8 of every expert; EP8 holds whole experts (vLLM `fused_moe.py`)
    tp = feats(KIMI, Plan(tp=8), hw)
    ep = feats(KIMI, Plan(tp=8, ep=8), hw)
    assert expert_bytes(ep) == pytest.approx(8 * expert_bytes(tp))
    k = arch(KIMI)
    assert k.moe is not None
    routed = sum(w.bytes for w in k.weights if w.name == "routed_experts")
    assert expert_bytes(ep) == pytest.approx(routed / (k.moe.num_experts * k.moe.moe_layers), rel=0.01)


def test_mla_kv_feature_is_replicated(hw: HardwareProfile) -> None:
    # 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes on every rank, at any TP (vLLM `DeepseekV2MLAAttention`)
    assert feats(KIMI, Plan(tp=8), hw).kv_full[0] == feats(KIMI, Plan(tp=4), hw).kv_full[0] == 61 * 576 * 2


@pytest.mark.parametrize("plan", [Plan(tp=4), Plan(tp=4, pp=2), Plan(tp=2, pp=4), Plan(tp=4, dp=2)])
def test_running_sequences_agree_with_memory_fit(hw: HardwareProfile, plan: Plan) -> None:
    # how many max-model-len sequences one DP rank runs is what memory_fit says fits (per GPU of one stage)
    case = make_case(arch("meta-llama/Llama-3.1-70B"), plan, hw, Settings())
    assert case.runs and case.memory is not None
    F = Features.stack([plan_features(case.arch, plan, hw, case.args, case.weights, case.memory)])
    assert int(kv_capacity(F, np.array([float(case.memory.max_model_len)]))[0]) * plan.dp == case.memory.max_concurrency


def test_stacked_features_hold_each_rows_fields(hw: HardwareProfile) -> None:
    """Rows are stacked as flat vectors (`Features.flat`, cached per case by the sweep); every field must come
    back as the row gave it, the [S] collective fields included."""
    rows = []
    for model, plan in ((KIMI, Plan(tp=8)), (MINIMAX, Plan(tp=2, dp=4, ep=8)), (MINIMAX, Plan(tp=4))):
        case = make_case(arch(model), plan, hw, Settings())
        assert case.memory is not None, case.reason
        rows.append(plan_features(case.arch, plan, hw, case.args, case.weights, case.memory))
    F = Features.stack(rows)
    for name in Features.__dataclass_fields__:
        want = np.array([r[name] for r in rows], dtype=float)
        np.testing.assert_array_equal(getattr(F, name), want, err_msg=name)
    assert F.coll_calls.shape == (3, len(SLOTS)) and F.layers.shape == (3,)
