"""The sweep's shortcuts change no number: a plan's distinct padded batches spread back to its grid exactly
(advisor/cost/batches.py); an `evaluate` over many kinds of model gives, bit for bit, what it gives with the grid
costed point by point and every step's decode attention computed afresh (`step._shared_decode_attention`), and a
case's results are the ones it gets alone (cases with the same features are evaluated once)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import catalog_arch

from advisor.cost import batches, step
from advisor.cost.batches import distinct
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
