"""scripts/step_breakdown.py: the parts it reports add up to the prediction it explains."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import BENCH, REPO

from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements
from advisor.calibrate.store import terms_for
from advisor.hardware import load_profile
from scripts import step_breakdown


def test_parts_add_up_to_the_predicted_step_and_ttft() -> None:
    rows = [r for r in read_measurements(BENCH / "silicon_dev.csv").rows if r.hardware == "b200-sxm"
            and (r.engine or "vllm") == "vllm" and r.model == "meta-llama/Llama-3.1-70B" and r.concurrency <= 8]
    bucket = prepare(rows)[1][("b200-sxm", "vllm")]
    terms = terms_for(load_profile("b200-sxm"), "vllm")[0]
    got = step_breakdown.breakdown(bucket, terms)
    assert len(got) == len(rows) > 10
    for d in got:
        assert sum(d[m] for m in step_breakdown.MECHANISMS) == pytest.approx(d["step"], rel=1e-9)
        s = d["wave_share"]
        assert d["ttft_pred"] == pytest.approx((1 - s) * d["ttft_steady"] + s * d["ttft_wave"] + d["request_ms"],
                                               rel=1e-6)
        assert d["tpot_pred"] >= d["step"] * (1 - 1e-9)  # prompts riding along only add to the decode step
        assert d["gemm"] > d["fixed"] > 0 and d["moe"] == 0  # a dense model: its weight reads lead at <= 8 users
        assert d["ttft_steady"] >= d["prefill"] > 0  # a staggered prompt waits at least for its own prefill
    by_len = {(r.tp, r.input_len): d["prefill"] for r, d in zip(bucket.rows, got, strict=True)}
    longer = [(by_len[tp, i], by_len[tp, j]) for (tp, i) in by_len for (tq, j) in by_len if tp == tq and j > i]
    assert longer and all(b > a for a, b in longer)  # more prompt tokens, a longer prefill


def test_unknown_hardware_is_one_line_and_exit_2() -> None:
    r = subprocess.run([sys.executable, "-m", "scripts.step_breakdown", str(BENCH / "silicon_dev.csv"),
                        "--hw", "nohw", "--engine", "vllm"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "nohw" in r.stderr
