"""Plan validity (advisor/cost/plan.py) against the engine rules (vLLM `FusedMoEParallelConfig.make`, quant
methods) and the case study: which plans the engine refuses, and why."""

from __future__ import annotations

import pytest
from conftest import catalog_arch

from advisor.cost.plan import Plan, candidate_plans, invalid_reason
from advisor.cost.sweep import all_cases, make_case
from advisor.cost.weights import requantize
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile

MINIMAX = "MiniMaxAI/MiniMax-M2.5"
KIMI = "moonshotai/Kimi-K2.5"
QWEN_FP8 = "Qwen/Qwen3-235B-A22B-FP8"
LLAMA70 = "meta-llama/Llama-3.1-70B"


arch = catalog_arch


def reason(model: str, plan: Plan, gpus: int = 8) -> str | None:
    a = arch(model)
    return invalid_reason(a, plan, gpus, requantize(a, None))


def test_node_has_eight_gpus(hw: HardwareProfile) -> None:
    # the default box is 8x RTX PRO 6000 Server Edition
    assert hw.topology.num_gpus == 8


# --- case study (block-FP8 MoE constraint, vLLM `Fp8MoEMethod`) --------------------------------


def test_minimax_fp8_tp2_valid_but_does_not_fit(hw: HardwareProfile) -> None:
    case = make_case(arch(MINIMAX), Plan(tp=2), hw, Settings())
    assert case.invalid is None
    assert case.memory is not None and not case.memory.fits
    assert case.reason is not None and "budget" in case.reason and "GiB" in case.reason


def test_minimax_fp8_tp4_fits(hw: HardwareProfile) -> None:
    case = make_case(arch(MINIMAX), Plan(tp=4), hw, Settings())
    assert case.runs, case.reason


@pytest.mark.parametrize("model", [MINIMAX, QWEN_FP8])
def test_block_fp8_moe_tp8_without_ep_is_invalid(model: str) -> None:
    # vLLM quant methods I = 1536, 1536/8 = 192 is not a multiple of the 128 block (fp8.py:Fp8MoEMethod)
    why = reason(model, Plan(tp=8))
    assert why is not None
    assert "1536/8" in why and "192" in why and "128" in why


@pytest.mark.parametrize("model", [MINIMAX, QWEN_FP8])
def test_block_fp8_moe_tp8_with_ep8_is_valid_and_fits(hw: HardwareProfile, model: str) -> None:
    # EP places whole experts (full I = 1536 = 12 x 128), vLLM `FusedMoEParallelConfig.make`
    case = make_case(arch(model), Plan(tp=8, ep=8), hw, Settings())
    assert case.invalid is None
    assert case.runs, case.reason


def test_block_fp8_moe_tp4_is_valid() -> None:
    # 1536/4 = 384 = 3 x 128
    assert reason(QWEN_FP8, Plan(tp=4)) is None
    assert reason(MINIMAX, Plan(tp=4)) is None


def test_kimi_int4_tp4_does_not_fit_tp8_fits(hw: HardwareProfile) -> None:
    k = arch(KIMI)
    assert k.weight_dtype == "int4"
    tp4 = make_case(k, Plan(tp=4), hw, Settings())
    tp8 = make_case(k, Plan(tp=8), hw, Settings())
    assert tp4.invalid is None and tp4.memory is not None and not tp4.memory.fits
    assert tp8.runs, tp8.reason


def test_nvfp4_minimax_tp8_is_valid() -> None:
    # NVFP4 needs only (K / tp) % 16 (modelopt.py): 192 % 16 == 0
    assert reason("nvidia/MiniMax-M2.5-NVFP4", Plan(tp=8)) is None


# --- generic rules -----------------------------------------------------------------------------------


def test_tp3_with_8_kv_heads_is_invalid() -> None:
    # MiniMax-M2.5: 48 query heads (divisible by 3) but 8 KV heads: neither 8 % 3 nor 3 % 8 (QKVParallelLinear)
    a = arch(MINIMAX)
    assert a.num_attention_heads % 3 == 0 and a.num_kv_heads == 8
    why = reason(MINIMAX, Plan(tp=3))
    assert why is not None and "8 KV heads" in why and "TP3" in why


def test_heads_not_divisible_is_invalid() -> None:
    why = reason(LLAMA70, Plan(tp=3))  # 64 heads
    assert why is not None and "64 attention heads" in why


def test_kv_heads_replicated_when_tp_exceeds_them() -> None:
    # Qwen3-235B: 4 KV heads; TP8 replicates each KV head on two ranks (8 % 4 == 0): allowed for the
    # attention, the plan only fails on the FP8 MoE shape
    a = arch(QWEN_FP8)
    assert a.num_kv_heads == 4
    why = reason(QWEN_FP8, Plan(tp=8))
    assert why is not None and "KV heads" not in why


def test_more_gpus_than_node_is_invalid(hw: HardwareProfile) -> None:
    why = reason(LLAMA70, Plan(tp=8, pp=2))
    assert why is not None and "16 GPUs" in why and "8" in why
    case = make_case(arch(LLAMA70), Plan(tp=8, dp=2), hw, Settings())
    assert case.invalid is not None and not case.runs


@pytest.mark.parametrize("plan", [Plan(tp=4, ep=8), Plan(tp=4, ep=3), Plan(tp=2, dp=2, ep=8), Plan(tp=8, ep=4),
                                  Plan(tp=2, dp=4, ep=2)])
def test_ep_other_than_tp_x_dp_is_invalid(plan: Plan) -> None:
    # vLLM's EP group is every TP x DP rank (`FusedMoEParallelConfig.make`): a divisor of TP x DP is refused too
    why = reason(MINIMAX, plan)
    assert why is not None and f"EP{plan.ep} is not TP x DP = {plan.tp * plan.dp}" in why


def test_ep_on_dense_model_is_invalid() -> None:
    why = reason(LLAMA70, Plan(tp=8, ep=8))
    assert why is not None and "mixture-of-experts" in why


def test_pp_beyond_layers_is_invalid() -> None:
    a = arch("meta-llama/Llama-3.1-8B")
    why = invalid_reason(a, Plan(pp=64), 64, a.weights)
    assert why is not None and f"{a.num_layers} layers" in why


def test_int4_group_rule() -> None:
    # compressed-tensors INT4 g32: (I / tp) % 32; Kimi I = 2048 -> 256 at TP8 is fine
    assert reason(KIMI, Plan(tp=8)) is None
    assert reason(KIMI, Plan(tp=8, ep=8)) is None


@pytest.mark.parametrize("model,plan", [
    (LLAMA70, Plan(tp=1)), (LLAMA70, Plan(tp=2)), (LLAMA70, Plan(tp=4)), (LLAMA70, Plan(tp=8)),
    (LLAMA70, Plan(tp=4, pp=2)), (LLAMA70, Plan(tp=2, dp=4)),
    (KIMI, Plan(tp=8)), (KIMI, Plan(tp=8, ep=8)), (KIMI, Plan(tp=1, dp=8, ep=8)),
    (MINIMAX, Plan(tp=4)), (MINIMAX, Plan(tp=4, ep=4)), (MINIMAX, Plan(tp=8, ep=8)),
    (MINIMAX, Plan(tp=2, dp=4, ep=8)), (QWEN_FP8, Plan(tp=4)), (QWEN_FP8, Plan(tp=4, pp=2)),
    ("openai/gpt-oss-120b", Plan(tp=4)), ("deepseek-ai/DeepSeek-V3", Plan(tp=8)),
    ("Qwen/Qwen3-32B", Plan(tp=8)),
])
def test_known_good_plans_are_valid(model: str, plan: Plan) -> None:
    assert reason(model, plan) is None


@pytest.mark.parametrize("model", [LLAMA70, KIMI, MINIMAX])
def test_candidate_plans_stay_in_node(model: str) -> None:
    a = arch(model)
    plans = list(candidate_plans(a, 8))
    assert plans and len(set(plans)) == len(plans)
    assert all(p.gpus <= 8 for p in plans)
    # every EP plan is vLLM's EP = TP x DP (FusedMoEParallelConfig.make)
    assert all(p.ep in (1, p.tp * p.dp) for p in plans)
    reasons = [invalid_reason(a, p, 8, a.weights) for p in plans]
    assert not any(r and "GPUs" in r for r in reasons)
    assert any(r is None for r in reasons)


def test_candidate_plans_cover_the_known_good_ones() -> None:
    plans = set(candidate_plans(arch(MINIMAX), 8))
    for p in (Plan(tp=4), Plan(tp=8, ep=8), Plan(tp=2, pp=2), Plan(tp=1, dp=8, ep=8)):
        assert p in plans
    assert not any(p.ep > 1 for p in candidate_plans(arch(LLAMA70), 8))


def test_all_cases_respects_gpu_limit(hw: HardwareProfile) -> None:
    cases = all_cases(arch(MINIMAX), hw, Settings(), gpus=4)
    assert cases and all(c.plan.gpus <= 4 for c in cases)
    assert any(c.runs for c in cases)


def test_plan_label() -> None:
    assert Plan(tp=8, ep=8).label() == "TP8+EP8"
    assert Plan(tp=2, pp=2, dp=2).label() == "TP2+PP2+DP2"


def test_every_plan_the_gpu_count_allows_is_searched(hw: HardwareProfile) -> None:
    # engines take any integer PP/DP size: MiniMax-M2.5 (62 layers, FP8) runs as PP3 on 3 GPUs, and 6 GPUs try PP3
    plans = set(candidate_plans(arch(MINIMAX), 3))
    assert Plan(tp=1, pp=3) in plans and all(p.gpus <= 3 for p in plans)
    assert {Plan(tp=2, pp=3), Plan(tp=1, pp=3, dp=2), Plan(tp=1, pp=6)} <= set(candidate_plans(arch(MINIMAX), 6))
    runs = [c.plan for c in all_cases(arch(MINIMAX), hw, Settings(), gpus=3) if c.runs]
    assert Plan(tp=1, pp=3) in runs
