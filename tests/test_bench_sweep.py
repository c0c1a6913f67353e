"""Benchmark of the vectorised sweep ('one array computation'): the whole catalog x every
runnable plan on the default box x 9 concurrencies x 4 length pairs, evaluated by ONE `evaluate` call.

Timings are printed (run with `-s`) and kept in pytest-benchmark's JSON; nothing asserts a time."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from advisor.catalog import all_entries
from advisor.cost.sweep import Case, all_cases, evaluate
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile, load_profile

CONCURRENCY = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
LENGTHS = [(128, 128), (1024, 1024), (8192, 1024), (32768, 1024)]
INPUT = np.array([i for i, _ in LENGTHS])
OUTPUT = np.array([o for _, o in LENGTHS])


@pytest.fixture(scope="module")
def hw() -> HardwareProfile:
    return load_profile("rtx-pro-6000-server")


def build(hw: HardwareProfile) -> list[Case]:
    return [c for e in all_entries() for c in all_cases(e.arch, hw, Settings()) if c.runs]


@pytest.fixture(scope="module")
def cases(hw: HardwareProfile) -> list[Case]:
    return build(hw)


def test_bench_build_cases(benchmark: Any, hw: HardwareProfile) -> None:
    t0 = time.perf_counter()
    got = benchmark(build, hw)
    models = {c.arch.model for c in got}
    print(f"\nbuild cases: {len(got)} runnable (model, plan) cases over {len(models)} models; "
          f"first call incl. benchmark rounds {time.perf_counter() - t0:.3f} s")
    # a model runs somewhere iff its weights fit the node's KV-free budget (with some room to spare)
    node_budget = hw.topology.num_gpus * hw.gpu.memory_bytes * 0.92  # vLLM 0.33's gpu_memory_utilization
    for e in all_entries():
        if e.arch.weight_bytes < 0.8 * node_budget:
            assert e.id in models, e.id
        if e.arch.weight_bytes > node_budget:
            assert e.id not in models, e.id
    assert all(c.plan.gpus <= hw.topology.num_gpus for c in got)


def test_bench_sweep(benchmark: Any, hw: HardwareProfile, cases: list[Case]) -> None:
    sweep = benchmark(evaluate, cases, Terms(), CONCURRENCY, INPUT, OUTPUT)
    out = sweep.out
    P, C, L = len(cases), len(CONCURRENCY), len(LENGTHS)
    points = P * C * L
    stats = benchmark.stats.stats if benchmark.stats is not None else None
    median = stats.median if stats is not None else float("nan")
    benchmark.extra_info.update({"cases": P, "points": points})
    print(f"\nsweep: {P} cases x {C} concurrencies x {L} lengths = {points} points in one evaluate(): "
          f"median {median * 1e3:.1f} ms ({median / points * 1e6:.2f} us/point)")
    for key, arr in out.items():
        assert arr.shape == (P, C, L), key
        assert not arr.flags.writeable, key
        assert np.all(np.isfinite(arr)), key
    assert np.all(out["tpot_s"] > 0) and np.all(out["ttft_s"] > 0) and np.all(out["output_tok_s"] > 0)
    assert np.all(out["running"] >= 1)
    assert np.all(out["running"] <= CONCURRENCY[None, :, None])
