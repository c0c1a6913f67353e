"""The disaggregated rows of docs/accuracy.md (`scripts/disagg_accuracy.py`): the block is what the stored predictions
give, the stored predictions are what the code predicts today (checked on one GPU's rows: the full refit takes
half an hour), and the verdict comparison follows its rule (`scripts/disagg_verdicts.py`)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from advisor.calibrate.disagg_predict import predict_disagg_rows
from scripts import disagg_accuracy as da
from scripts.disagg_verdicts import Case, Point, aggregated_at, cases, closed_loop, name_family
from scripts.readme_block import read_block

STALE = "stale: run python -m scripts.disagg_accuracy --refit --update"


def test_block_is_the_stored_predictions() -> None:
    block = read_block("disagg-accuracy")
    assert block == da.render().rstrip("\n") + "\n", "stale: run python -m scripts.disagg_accuracy --update"
    for words in ("Held out by hardware", "Held out by model", "| >256 |", "| recovered |", "comparable "
                  "disaggregated runs", "always answering the more common measured verdict"):
        assert words in block, words


def test_stored_predictions_are_today_s() -> None:
    """The shipped-calibration rows of B300 predicted again match the stored ones."""
    stored = {r.row: r for r in da.rows_of("shipped") if r.hardware == "b300-sxm"}
    again = predict_disagg_rows(da.DISAGG, only=lambda row: row["hardware"] == "b300-sxm")
    assert len(again) == len(stored) > 50
    for r in again:
        s = stored[r.row]
        assert (r.predicted is None) == (s.predicted is None), (r.source, r.reason, s.reason)
        if r.predicted and s.predicted:
            for m in ("ttft_ms", "tpot_ms"):
                assert r.predicted[m] == pytest.approx(s.predicted[m], rel=1e-5), (r.source, m, STALE)


def test_held_out_rows_are_every_row_once_per_split() -> None:
    with open(da.HELD_OUT, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    n = sum(1 for _ in csv.DictReader(open(da.DISAGG, newline="", encoding="utf-8")))
    for split in ("shipped", "hardware", "model"):
        mine = [r for r in rows if r["split"] == split]
        assert sorted(int(r["row"]) for r in mine) == list(range(1, n + 1)), split
    hw = {r["group"] for r in rows if r["split"] == "hardware"}
    assert hw == {"b200-sxm+gb200", "b300-sxm+gb300", "h100-sxm"}
    ds = {r["group"] for r in rows if r["split"] == "model" and r["model"].startswith("deepseek-ai/")}
    assert len(ds) == 1  # DeepSeek-R1 and -V3 held out together


def test_verdict_rule() -> None:
    """A disaggregated run against the most tok/s per GPU of an aggregated run at least as fast per user, only
    inside the aggregated runs' speeds; the closed loop's tok/s per GPU by hand."""
    x, y = closed_loop(concurrency=64, output_len=1024, ttft_ms=1000, tpot_ms=20, gpus=8)
    assert x == 50 and y == pytest.approx(64 * 1024 / (1 + 1023 * 0.02) / 8)
    key = ("m", "h", "e", "fp8", 1, 1)
    agg = [Point(key, 10, 100, 10, 100, "a"), Point(key, 40, 60, 40, 70, "b"), Point(key, 80, 20, 80, 30, "c")]
    assert aggregated_at(agg, 40, True) == 60 and aggregated_at(agg, 41, True) == 20
    assert aggregated_at(agg, 5, True) is None and aggregated_at(agg, 90, True) is None
    found = cases(agg, [Point(key, 30, 70, 30, 65, "d"), Point(key, 90, 5, 50, 5, "e")])
    assert len(found) == 1 and found[0].measured == "disaggregated" and found[0].predicted == "aggregated"
    assert isinstance(found[0], Case)
    assert name_family("nvidia/Qwen3-32B-NVFP4") == name_family("Qwen/Qwen3-32B") == "qwen3-32b"


def test_stored_verdicts_follow_from_the_stored_rows() -> None:
    with open(da.VERDICTS, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    for v in rows:
        assert float(v["x_meas"]) > 0 and float(v["agg_meas"]) > 0
    meas = np.array([float(v["y_meas"]) > float(v["agg_meas"]) for v in rows])
    pred = np.array([float(v["y_pred"]) > float(v["agg_pred"]) for v in rows])
    block = read_block("disagg-accuracy")
    agree = int((meas == pred).sum())
    assert f"{len(rows)} comparable disaggregated runs; the predicted verdict agrees with the measured one in " \
           f"{agree} ({100 * agree / len(rows):.0f}%)" in block
