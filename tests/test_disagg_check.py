"""`advisor check` and `advisor calibrate` read disaggregated rows (`calibrate/disagg_check.py`): each row predicted
at its own pools as `predict_disagg_rows` predicts it, the same summary as aggregated rows; a row missing one pool
says so, and is one line (exit 2) when no row can be predicted; the schema is in `check --help` and in
docs/measurements.md (generated)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor.calibrate.disagg_columns import COLUMNS, READ_REQUIRED
from advisor.calibrate.disagg_predict import predict_disagg_rows
from scripts import schema_doc
from scripts.readme_block import read_block

REPO = Path(__file__).resolve().parents[1]
# a user's own rows: no plan_status, source or nodes (Qwen3-8B on one H100 node, vLLM by default)
ROW = {"model": "Qwen/Qwen3-8B", "hardware": "h100-sxm", "concurrency": "8", "input_len": "2048",
       "output_len": "256", "prefill_workers": "1", "prefill_tp": "2", "decode_workers": "1", "decode_tp": "4",
       "ttft_ms": "300", "tpot_ms": "10"}


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return path


def test_each_row_is_predicted_at_its_own_pools(advisor: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "mine.csv", [ROW, {**ROW, "decode_workers": ""}, {**ROW, "decode_tp": "2",
                                                                             "concurrency": "32"}])
    r = advisor("check", str(path), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    want = predict_disagg_rows(path)
    assert len(doc["rows"]) == 3
    first = doc["rows"][0]
    assert first["input"]["prefill"] == {"workers": 1, "tp": 2, "pp": 1, "dp": 1, "ep": 1}
    assert first["input"]["engine"] == "vllm" and first["input"]["source"] == "mine.csv row 1"
    assert first["deployment"] == "1 x TP2 prefill + 1 x TP4 decode"
    for got, w in zip(doc["rows"], want, strict=True):
        if w.predicted is None:
            assert got["predicted"] is None and got["reason"] == w.reason
            continue
        assert got["predicted"]["ttft_ms"] == pytest.approx(w.predicted["ttft_ms"], rel=1e-9)
        assert got["error_pct"]["tpot_ms"] == pytest.approx(100 * (w.predicted["tpot_ms"] - 10) / 10, rel=1e-9)
    assert doc["rows"][1]["reason"] == "missing the decode pool: no decode_workers recorded"
    s = doc["summary"]["overall"]
    assert (s["rows"], s["predicted"], s["tpot_ms"]["n"]) == (3, 2, 2)
    errs = [abs(100 * (w.predicted["ttft_ms"] - 300) / 300) for w in want if w.predicted]
    assert s["ttft_ms"]["median_abs_pct"] == pytest.approx(round(float(np.median(errs)), 2))


def test_the_measured_runs_match_the_predictor(advisor: Any) -> None:
    """The 1,127 measured rows: what check predicts is what `predict_disagg_rows` predicts (337 runs predicted)."""
    path = REPO / "tests" / "data" / "bench" / "silicon_disagg_dev.csv"
    r = advisor("check", str(path), "--summary", "--json")
    assert r.code == 0, r.err
    s = json.loads(r.out)["summary"]
    want = [w for w in predict_disagg_rows(path) if w.predicted is not None]
    assert s["overall"]["rows"] == 1127 and s["overall"]["predicted"] == len(want) >= 300
    tpot = [w.error_pct("tpot_ms") for w in want]
    assert s["overall"]["tpot_ms"]["median_signed_pct"] == pytest.approx(round(float(np.median(tpot)), 2))


@pytest.mark.parametrize(("rows", "message"), [
    ([{**ROW, "decode_workers": "0"}], "mine.csv row 1: missing the decode pool: no decode_workers recorded"),
    ([{k: v for k, v in ROW.items() if not k.startswith("decode_")}],
     "no column decode_workers (a disaggregated row gives both pools: the decode pool's cells are missing)"),
])
def test_a_row_missing_one_pool_is_one_line(advisor: Any, tmp_path: Path, rows: list[dict[str, str]],
                                            message: str) -> None:
    r = advisor("check", str(write(tmp_path / "mine.csv", rows)))
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and message in r.err and "Traceback" not in r.err


def test_aggregated_and_disaggregated_files_are_checked_apart(advisor: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "mine.csv", [ROW])
    r = advisor("check", str(path), str(REPO / "advisor" / "examples" / "case_study.csv"))
    assert r.code == 2 and "check them in separate runs" in r.err
    r = advisor("check", str(path), "--tp", "2")
    assert r.code == 2 and "--tp: a disaggregated row gives each pool's plan" in r.err


def test_check_help_documents_the_disaggregated_schema(advisor: Any) -> None:
    r = advisor("check", "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    for col in (*READ_REQUIRED, "attention_dp", "moe_ep", "nodes", "repeat_of", "spec_decoding"):
        assert col in text, col
    assert "silicon_disagg_dev.csv" in text


def test_calibrate_predicts_disaggregated_rows_before_and_after_the_fit(advisor: Any, tmp_path: Path) -> None:
    """The fit is made on the aggregated rows; the disaggregated rows of its GPU and engine are predicted under the
    terms it started from and under the fitted ones, and reported (not fitted)."""
    case = str(REPO / "advisor" / "examples" / "case_study.csv")
    minimax = {**ROW, "model": "MiniMaxAI/MiniMax-M2.5", "hardware": "rtx-pro-6000-server", "prefill_tp": "4",
               "decode_tp": "4", "input_len": "8192", "output_len": "1024", "ttft_ms": "900", "tpot_ms": "30"}
    dis = write(tmp_path / "dis.csv", [minimax, {**minimax, "hardware": "h100-sxm"}])
    r = advisor("calibrate", case, str(dis), "--hw", "rtx-pro-6000-server", "-o", str(tmp_path / "c.json"),
                "--force", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)["disaggregated"]
    assert (d["rows"], d["predicted"], d["files"]) == (1, 1, [str(dis)])
    assert set(d["before"]) == set(d["after"]) == {"ttft_ms", "tpot_ms"} and d["after"]["tpot_ms"]["n"] == 1
    r = advisor("calibrate", str(dis), "--hw", "rtx-pro-6000-server", "-o", str(tmp_path / "c2.json"))
    assert r.code == 2 and "disaggregated rows only" in r.err and not (tmp_path / "c2.json").exists()


def test_measurement_docs_list_the_disaggregated_columns() -> None:
    block = read_block("disagg-measurement-columns")
    assert block == schema_doc.disagg_columns().rstrip("\n") + "\n", "stale: run python -m scripts.schema_doc --update"
    rows = [ln for ln in block.splitlines() if ln.startswith("| `")]
    assert [ln.split("`")[1] for ln in rows] == list(COLUMNS)
    assert all(f"| `{c}` | required" in block for c in READ_REQUIRED if not c.endswith("_workers"))


def test_users_beyond_the_recipes_slots_wait_for_one() -> None:
    """InferenceX's `ctx1_gen4_tep8_batch8_eplb0_mtp0_36` (GB300, DeepSeek-R1 FP8, 1k/8k): 36 users on 4 decode
    workers whose recipe admits 8 requests each (`decode_max_batch`, scripts/recipe_batches.py), so 4 always wait,
    each for (36 / 32 - 1) of a request's lifetime: measured TTFT 10.4 s where the model without the recipe's
    limit gave 0.26 s. Without the recipe's limit (every user holds a slot, the source's own batch 36 / 4 = 9 a
    worker) it does not wait."""
    path = REPO / "tests" / "data" / "bench" / "silicon_disagg_dev.csv"
    with open(path, newline="", encoding="utf-8") as fh:
        run = "_gb300_trtllm_fp8_disagg_1024x8192_c36_cfg392"
        row = next(r for r in csv.DictReader(fh) if r["source"].endswith(run))
    assert (row["decode_workers"], row["decode_max_batch"], row["concurrency"]) == ("4", "8", "36")
    from advisor.calibrate.disagg_predict import predict_one
    from advisor.calibrate.store import terms_for

    def shipped(hw: Any, engine: str) -> Any:
        return terms_for(hw, engine)[0]

    got = predict_one(row, shipped, {}).predicted
    free = predict_one({**row, "decode_max_batch": ""}, shipped, {}).predicted
    assert got is not None and free is not None
    lifetime_s = (free["ttft_ms"] + (8192 - 1) * got["tpot_ms"]) / 1e3
    assert got["ttft_ms"] / 1e3 == pytest.approx(free["ttft_ms"] / 1e3 + (36 / 32 - 1) * lifetime_s, rel=0.15)
    # 10,433 ms measured; predicted at the mean lengths the client drew (0.9 x): 9.2 s
    assert got["ttft_ms"] == pytest.approx(float(row["ttft_ms"]), rel=0.15)
    assert free["ttft_ms"] < 0.05 * float(row["ttft_ms"])


def test_rows_are_predicted_at_the_mean_lengths_their_client_drew(tmp_path: Path) -> None:
    """`length_ratio` 0.8 (InferenceX's client): lengths drawn uniformly from int(0.8 x L) to L, so 2,048 / 256 run as
    (1,638 + 2,048) / 2 = 1,843 and (204 + 256) / 2 = 230 tokens on average (`predict_table.mean_lengths`); a ratio
    outside (0, 1] is an unreadable cell."""
    rows = [{**ROW, "length_ratio": "0.8"}, {**ROW, "input_len": "1843", "output_len": "230", "length_ratio": "1"},
            {**ROW, "length_ratio": "2"}]
    drawn, exact, bad = predict_disagg_rows(write(tmp_path / "mine.csv", rows))
    assert drawn.predicted is not None and exact.predicted is not None
    for m in ("ttft_ms", "tpot_ms"):
        assert drawn.predicted[m] == pytest.approx(exact.predicted[m], rel=0.01), m
    assert bad.predicted is None
    assert bad.reason == "unreadable cell: length_ratio 2: a share of the stated lengths, in (0, 1]"


def test_an_sglang_decode_that_looks_for_requests_every_10_steps_delays_the_prefill() -> None:
    """InferenceX's GB200 DeepSeek-R1 NVFP4 1k/1k low-latency run at 4 users (srt-slurm
    `recipes/gb200-fp4/1k1k/low-latency.yaml`: `scheduler-recv-interval: 10` on both sides, `decode_recv_interval`
    from `research/disagg_recipes.py`): its decode pre-allocates a request's KV, which the prefill waits for, only
    every 10th step, (10 - 1) / 2 decode steps more on average while its other users decode (`disagg_serving.solve`);
    TPOT barely moves. A value below 1 is an unreadable cell."""
    from advisor.calibrate.disagg_predict import predict_one
    from advisor.calibrate.store import terms_for

    def shipped(hw: Any, engine: str) -> Any:
        return terms_for(hw, engine)[0]

    path = REPO / "tests" / "data" / "bench" / "silicon_disagg_dev.csv"
    with open(path, newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if "gb200-fp4/1k1k/low-latency" in r["config_ref"]
                   and r["concurrency"] == "4" and not r["repeat_of"])
    assert (row["engine"], row["decode_recv_interval"], row["decode_tp"]) == ("sglang", "10", "4")
    got = predict_one(row, shipped, {}).predicted
    every = predict_one({**row, "decode_recv_interval": ""}, shipped, {}).predicted
    assert got is not None and every is not None
    assert got["tpot_ms"] == pytest.approx(every["tpot_ms"], rel=0.01)  # its users' batch barely moves
    # 4 users: the other 3 keep the decode busy (min(others x b, 1) = 1); TPOT stands for the decode step
    assert got["ttft_ms"] - every["ttft_ms"] == pytest.approx(4.5 * got["tpot_ms"], rel=0.25)
    bad = predict_one({**row, "decode_recv_interval": "0"}, shipped, {})
    assert bad.predicted is None and bad.reason is not None and bad.reason.startswith(
        "unreadable cell: decode_recv_interval 0")
