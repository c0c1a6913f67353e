"""Benchmark of one model on a 72-GPU rack (18 GB200 trays in one NVLink domain): every candidate plan built and
every runnable one evaluated over the rank grid of concurrencies in one `evaluate` call (the target: under 1 s on a
2-CPU machine). Timings are printed (run with `-s`) and kept in pytest-benchmark's JSON; nothing asserts a time."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from conftest import catalog_arch

from advisor.cost.sweep import Sweep, all_cases, evaluate
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.decide.query import GRID
from advisor.hardware import load_profile
from advisor.hardware.cluster import load_cluster

MODEL = "deepseek-ai/DeepSeek-R1"


def rack_sweep() -> Sweep:
    hw = load_profile("gb200")
    cases = [c for c in all_cases(catalog_arch(MODEL), hw, Settings(engine="sglang"), cluster=load_cluster(hw, 18))
             if c.runs]
    return evaluate(cases, Terms(), np.array(GRID, dtype=float), np.array([1024.0]), np.array([1024.0]))


def test_bench_rack_plans_and_grid(benchmark: Any) -> None:
    t0 = time.perf_counter()
    sweep = benchmark(rack_sweep)
    P = len(sweep.cases)
    print(f"\n{MODEL} on 18 x gb200: {P} runnable plans x {len(GRID)} concurrencies; first call incl. benchmark "
          f"rounds {time.perf_counter() - t0:.3f} s")
    assert P > 50 and max(c.plan.gpus for c in sweep.cases) == 72
    assert np.all(np.isfinite(sweep.out["tpot_s"])) and np.all(sweep.out["tpot_s"] > 0)
