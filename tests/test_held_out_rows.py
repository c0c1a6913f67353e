"""scripts/held_out_rows.py: one CSV line per held-out row whose errors and band biases are the split's summary."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest
from conftest import BENCH

from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements
from research.splits import held_out, pooled_fitter, summarize
from scripts import held_out_rows


def test_rows_carry_the_summary_of_the_split(tmp_path: Path) -> None:
    # two models of one engine and GPU (TensorRT-LLM on H100: Llama-3.1-8B, Qwen3-32B), 16 rows each: each is
    # predicted by terms fitted on the other alone
    rows = [r for r in read_measurements(BENCH / "silicon_dev.csv").rows
            if r.hardware == "h100-sxm" and r.engine == "trtllm" and r.tp == 2]
    picked = [r for m in ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B") for r in
              [r for r in rows if r.model == m][:16]]
    held = held_out(prepare(picked)[1], "model", pooled_fitter())
    out = tmp_path / "rows.csv"
    held_out_rows.write_rows(held, out)
    with open(out, newline="") as fh:
        lines = list(csv.DictReader(fh))
    assert len(lines) == len(held) == 32
    assert {ln["model"] for ln in lines} == {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B"}
    for ln in lines:
        meas, pred = float(ln["tpot_ms"]), float(ln["tpot_pred"])
        assert float(ln["tpot_err_pct"]) == pytest.approx(100 * (pred - meas) / meas, abs=0.01)
    summary = summarize(held)["overall"]
    for band, want in summary["tpot_bias_by_band"]["dense"].items():
        got = [float(ln["tpot_err_pct"]) for ln in lines if ln["band"] == band]
        assert (want is None) == (not got)
        if got:
            assert statistics.median(got) == pytest.approx(want, abs=0.01)


def test_forked_groups_give_the_rows_of_one_process() -> None:
    # the scripts fit the held-out groups in parallel (`held_out(..., workers)`): same rows, order and values
    rows = [r for r in read_measurements(BENCH / "silicon_dev.csv").rows
            if r.hardware == "h100-sxm" and r.engine == "trtllm" and r.tp == 4]
    picked = [r for m in ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B") for r in
              [r for r in rows if r.model == m][:8]]
    buckets = prepare(picked)[1]
    one = held_out(buckets, "model", pooled_fitter())
    two = held_out(buckets, "model", pooled_fitter(), workers=2)
    assert len(one) == 16
    assert [(h.row, h.key, h.predicted) for h in two] == [(h.row, h.key, h.predicted) for h in one]
