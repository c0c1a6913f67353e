"""vLLM 0.11-0.16 sort every sampled row's logits when requests carry a top-p (`cost/step.py:
SORT_SAMPLER_S_PER_LOGIT`, `engines.Release.sampler`): the step grows by rows x vocabulary x 0.215 ns, on every
rank (TP does not split it), and by nothing on later releases, other engines or greedy requests."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import catalog_arch

from advisor.cost.features import Features, plan_features
from advisor.cost.plan import Plan
from advisor.cost.step import SORT_SAMPLER_S_PER_LOGIT, comm_fn, step_time
from advisor.cost.sweep import make_case
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.hardware import load_profile

QWEN = "Qwen/Qwen3-32B"  # vocab 151,936 (its config.json)


def decode_step(settings: Settings, tp: int, rows: float) -> dict[str, np.ndarray]:
    hw = load_profile("h100-sxm")
    case = make_case(catalog_arch(QWEN), Plan(tp=tp), hw, settings)
    assert case.runs and case.memory is not None, case.reason
    F = Features.stack([plan_features(case.arch, case.plan, hw, case.args, case.weights, case.memory)])
    t, c, z = np.array([rows]), np.array([1024.0]), np.array([0.0])
    return step_time(F, hw, Terms(), comm_fn(hw, settings.engine), t, c, z, c, t)


@pytest.mark.parametrize("tp", [2, 8])
def test_sorting_releases_pay_rows_times_vocabulary(tp: int) -> None:
    greedy = decode_step(Settings(engine_version="0.12.0"), tp, 64.0)
    nucleus = decode_step(Settings(engine_version="0.12.0", top_p=0.95), tp, 64.0)
    by_hand = 64 * 151_936 * 0.215e-9  # 2.09 ms, the same at TP2 and TP8
    assert SORT_SAMPLER_S_PER_LOGIT == 0.215e-9
    assert nucleus["total"][0] - greedy["total"][0] == pytest.approx(by_hand, rel=1e-9)
    assert nucleus["mech_sampler"][0] == pytest.approx(by_hand, rel=1e-9) and greedy["mech_sampler"][0] == 0


@pytest.mark.parametrize("settings", [Settings(engine_version="0.17.1", top_p=0.95),  # Triton top-k/top-p
                                      Settings(top_p=0.95),  # the default release: the V2 runner's sampler
                                      Settings(engine_version="0.12.0", top_p=1.0),  # no nucleus: nothing sorted
                                      Settings(engine="sglang", top_p=0.95)])
def test_no_sort_elsewhere(settings: Settings) -> None:
    assert decode_step(settings, 2, 64.0)["mech_sampler"][0] == 0
