"""scripts/ttft_vs_prefill.py: the line it fits is the least-squares line through the rows it groups."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import BENCH, REPO

from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements
from advisor.calibrate.store import terms_for
from advisor.hardware import load_profile
from scripts import step_breakdown, ttft_vs_prefill


def test_line_recovers_a_hand_made_line() -> None:
    prefill = np.array([20.0, 40.0, 80.0])
    a, k = ttft_vs_prefill.line(prefill, 30.0 + 2.5 * prefill)
    assert (a, k) == (pytest.approx(30.0), pytest.approx(2.5))


def test_each_group_is_the_least_squares_line_of_its_rows() -> None:
    rows = [r for r in read_measurements(BENCH / "silicon_dev.csv").rows if r.hardware == "b200-sxm"
            and (r.engine or "vllm") == "vllm" and r.model == "meta-llama/Llama-3.1-70B"]
    bucket = prepare(rows)[1][("b200-sxm", "vllm")]
    parts = step_breakdown.breakdown(bucket, terms_for(load_profile("b200-sxm"), "vllm")[0])
    got = ttft_vs_prefill.shapes(bucket.rows, parts)
    # the InferenceX campaign: 4-64 users, 1024- and 8192-token prompts, TP1-TP8 in each
    assert {u for u, _ in got} == {4, 8, 16, 32, 64} and {p for _, p in got} == {1024, 8192}
    for (users, prompt), s in got.items():
        mine = [(d["prefill"], d["ttft_ms"]) for r, d in zip(bucket.rows, parts, strict=True)
                if r.concurrency == users and r.input_len == prompt]
        k, a = np.polyfit([p for p, _ in mine], [t for _, t in mine], 1)
        assert s["rows"] == len(mine) and (s["a"], s["k"]) == (pytest.approx(a), pytest.approx(k))
        assert s["k_model"] > 0  # a longer prefill never shortens the predicted first token


def test_unknown_hardware_is_one_line_and_exit_2() -> None:
    r = subprocess.run([sys.executable, "-m", "scripts.ttft_vs_prefill", str(BENCH / "silicon_dev.csv"),
                        "--hw", "nohw", "--engine", "vllm"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "nohw" in r.stderr
