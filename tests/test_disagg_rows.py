"""Measured disaggregated rows predicted at their own pools (`calibrate/disagg_predict.py`): each row becomes its
deployment on its own nodes and is predicted as its benchmark ran; rows that cannot be say why."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from advisor.calibrate.disagg_columns import COLUMNS
from advisor.calibrate.disagg_predict import band_of, predict_disagg_rows, side_plan, summary
from advisor.cost.disagg import make_disagg
from advisor.cost.disagg_predict import predict_disagg
from advisor.cost.plan import Plan
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.errors import AdvisorError
from advisor.hardware import load_profile
from advisor.hardware.cluster import load_cluster
from advisor.resolve import resolve

# a GB200 TensorRT-LLM run as the source records it: DEP8 prefill (tp 1, attention_dp 8, moe_ep 8) and DEP32 decode
ROW = {"model": "deepseek-ai/DeepSeek-V3", "hardware": "gb200", "engine": "trtllm", "weight_dtype": "fp8",
       "spec_decoding": "none", "spec_tokens": "0", "concurrency": "256", "input_len": "1024", "output_len": "1024",
       "prefill_workers": "1", "prefill_tp": "1", "prefill_pp": "1", "prefill_attention_dp": "8",
       "prefill_moe_tp": "1", "prefill_moe_ep": "8", "decode_workers": "1", "decode_tp": "1", "decode_pp": "1",
       "decode_attention_dp": "32", "decode_moe_tp": "1", "decode_moe_ep": "32", "nodes": "10",
       "ttft_ms": "667.345", "tpot_ms": "15.331", "plan_status": "recorded", "source": "test id=1"}


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows({k: r.get(k, "") for k in COLUMNS} for r in rows)
    return path


def test_rows_predicted_at_their_own_pools(tmp_path: Path) -> None:
    assert side_plan(ROW, "prefill") == Plan(tp=1, dp=8, ep=8)
    assert side_plan(ROW, "decode") == Plan(tp=1, dp=32, ep=32)
    rows = [ROW, {**ROW, "source": "test id=2", "repeat_of": "test id=1"},
            {**ROW, "source": "test id=3", "plan_status": "unsettled", "unsettled_reason": "several configs"},
            {**ROW, "source": "test id=4", "spec_decoding": "mtp", "spec_tokens": "3"},
            {**ROW, "source": "test id=5", "hardware": "gb200", "nodes": "1"}]
    terms = Terms()
    got = predict_disagg_rows(write(tmp_path / "rows.csv", rows), lambda hw, engine: terms)
    first = got[0]
    assert first.predicted is not None and first.reason is None
    gb200 = load_profile("gb200")
    d = make_disagg(resolve("deepseek-ai/DeepSeek-V3").arch, gb200, Plan(tp=1, dp=8, ep=8), 1,
                    Plan(tp=1, dp=32, ep=32), 1, Settings(engine="trtllm", weight_dtype="fp8", max_model_len=2048),
                    cluster=load_cluster(gb200, 10))
    p = predict_disagg(d, terms, 256, 1024, 1024, benchmark=True)
    assert first.predicted == pytest.approx({"ttft_ms": p.ttft_ms, "tpot_ms": p.tpot_ms,
                                             "output_tok_s": p.output_tok_s})
    assert first.error_pct("tpot_ms") == pytest.approx(100 * ((p.tpot_ms or 0) - 15.331) / 15.331)
    assert got[1].reason == "a repeat of test id=1 (the same run, counted once)"
    assert got[2].reason == "deployment not settled: several configs"
    assert got[3].reason is not None and got[3].reason.startswith("measured with speculative decoding")
    assert got[4].reason is not None and "needs 40 GPUs" in got[4].reason  # 40 GPUs on one 4-GPU tray
    s = summary(got, lambda r: r.plan_status)
    assert s == {"recorded": {"n": 1, "ttft_median_abs_pct": abs(first.error_pct("ttft_ms") or 0),
                              "ttft_median_signed_pct": first.error_pct("ttft_ms"),
                              "tpot_median_abs_pct": abs(first.error_pct("tpot_ms") or 0),
                              "tpot_median_signed_pct": first.error_pct("tpot_ms")}}
    assert [band_of(c) for c in (1, 16, 64, 256, 257)] == ["1-4", "5-16", "17-64", "65-256", ">256"]


def test_not_a_disaggregated_file(tmp_path: Path) -> None:
    path = tmp_path / "agg.csv"
    path.write_text("model,hardware,engine,input_len,output_len,source\nx,y,vllm,1,1,s\n", encoding="utf-8")
    with pytest.raises(AdvisorError, match="not a disaggregated measurement file: no column prefill_workers"):
        predict_disagg_rows(path, lambda hw, engine: Terms())
