"""`advisor check`: every measured row gets a prediction or a reason; JSON schema; exit 2 on bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import BENCH, CASE_STUDY, assert_one_line, cli

REPO = Path(__file__).resolve().parents[1]
METRICS = {"ttft_ms", "tpot_ms", "output_tok_s"}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`advisor ARGS` in this process (`conftest.cli`: what `python -m advisor.cli` gives)."""
    return cli(*args, env={"COLUMNS": "250"}, cwd=REPO)  # rich wraps cells to the terminal width


def _case() -> Path:
    return CASE_STUDY


def test_check_case_study_predicts_all_four_rows_with_errors() -> None:
    r = _cli("check", str(_case()), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = doc["rows"]
    assert len(rows) == 4
    for row in rows:
        assert set(row) == {"input", "measured", "predicted", "error_pct", "reason", "calibrated"}
        assert set(row["measured"]) == METRICS and set(row["predicted"]) == METRICS
        assert row["calibrated"]["how"].startswith("shipped: vllm terms pooled")
        for m in METRICS:
            meas = row["measured"][m]
            if meas is None:
                assert row["error_pct"][m] is None
            else:
                want = 100 * (row["predicted"][m] - meas) / meas
                assert abs(row["error_pct"][m] - want) < 1e-9
    assert "input_len unknown: assumed 1024" in rows[0]["reason"]
    # the measured order holds: MiniMax TP4 single-user is faster than Kimi TP8; EP8 MiniMax beats Kimi C=128
    kimi1, kimi128, mm1, mm_ep8 = (row["predicted"]["output_tok_s"] for row in rows)
    assert mm1 > kimi1 and mm_ep8 > kimi128
    overall = doc["summary"]["overall"]
    assert overall["rows"] == 4 and overall["predicted"] == 4
    assert overall["output_tok_s"]["n"] == 4 and overall["tpot_ms"]["n"] == 2
    assert "rtx-pro-6000-server/vllm" in doc["summary"]


def test_check_a_speculative_run_at_its_acceptance_length(tmp_path: Path) -> None:
    # DeepSeek-V3 with its MTP layer drafting one token, 8 H200s under vLLM, 4 users: the row that records its
    # mean acceptance length is predicted at it; the same run without it says what is missing
    f = tmp_path / "mtp.csv"
    f.write_text("model,hardware,engine,tp,spec_tokens,spec_accept_len,concurrency,input_len,output_len,tpot_ms\n"
                 "deepseek-ai/DeepSeek-V3,h200-sxm,vllm,8,1,1.8,4,1024,1024,9.0\n"
                 "deepseek-ai/DeepSeek-V3,h200-sxm,vllm,8,1,,4,1024,1024,9.0\n"
                 "deepseek-ai/DeepSeek-V3,h200-sxm,vllm,8,,,4,1024,1024,12.0\n")
    r = _cli("check", str(f), "--json")
    assert r.returncode == 0, r.stderr
    mtp, unknown, plain = json.loads(r.stdout)["rows"]
    assert unknown["predicted"] is None and "spec_accept_len" in unknown["reason"]
    # 1.8 tokens a step for a step that verifies 2 positions and drafts 1: faster per token, not 1.8x
    assert plain["predicted"]["tpot_ms"] / 1.8 < mtp["predicted"]["tpot_ms"] < plain["predicted"]["tpot_ms"]


def test_check_rejected_and_unpredictable_rows_carry_reasons(tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,engine,tp,concurrency,input_len,output_len,tpot_ms\n"
                 "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,2,1,1024,256,12\n"  # does not fit at TP2
                 "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,x,1,1024,256,12\n"  # rejected: tp not a number
                 "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,4,1,1024,256,12\n")  # predicted
    r = _cli("check", str(f), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = doc["rows"]
    assert len(rows) == 3 and [row["predicted"] is None for row in rows] == [True, False, True]  # rejected last
    assert "cannot run" in rows[0]["reason"]
    assert rows[2]["reason"].startswith("rejected:") and "tp" in rows[2]["reason"]
    assert doc["unpredicted"] == {rows[0]["reason"]: 1, rows[2]["reason"]: 1}


def test_check_human_output_has_table_and_summary() -> None:
    r = _cli("check", str(_case()))
    assert r.returncode == 0, r.stderr
    assert "Summary" in r.stdout and "Kimi-K2.5-NVFP4" in r.stdout


def test_check_garbage_file_exits_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.csv"
    junk.write_text("this,is\nnot,a measurement file\n")
    r = _cli("check", str(junk), "--json")
    assert r.returncode == 2 and str(junk) in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_check_calibration_for_other_hardware_exits_2_naming_it(tmp_path: Path) -> None:
    other = REPO / "advisor" / "calibrations" / "h100-sxm--vllm.json"
    r = _cli("check", str(_case()), "--calibration", str(other))
    assert r.returncode == 2 and str(other) in r.stderr and "h100-sxm" in r.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    r = _cli("check", str(_case()), "--calibration", str(broken))
    assert r.returncode == 2 and str(broken) in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_check_silicon_dev_predicts_most_rows() -> None:
    r = _cli("check", str(BENCH / "silicon_dev.csv"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["rows"]) == 1444
    unpredicted = [row for row in doc["rows"] if row["predicted"] is None]
    assert all(row["reason"] for row in unpredicted)
    assert doc["summary"]["overall"]["predicted"] == 1319
    # the 124 rows measured with speculative decoding (tests/data/bench/README.md) say so
    assert sum("speculative decoding" in row["reason"] for row in unpredicted) == 124
    # every other row is predicted but the one whose plan needs more GPUs than the node has (GB200 TP8 EP8 over two
    # trays; the 42 rack-scale rows were disaggregated runs, now in silicon_disagg_dev.csv)
    others = [row["reason"] for row in unpredicted if "speculative decoding" not in row["reason"]]
    assert len(others) == 1 and all("the node has 4" in r for r in others)


def test_condition_flags_fill_what_a_vllm_bench_json_lacks(tmp_path: Path) -> None:
    # a `vllm bench serve --save-result` file without --metadata holds no hardware or plan: the row is
    # rejected for it, and --hw/--tp supply it (the file's own values would win)
    raw = json.loads((Path(__file__).parent / "fixtures" / "bench" / "vllm_bench_serve.json").read_text())
    for key in ("hardware", "tp"):
        raw.pop(key)
    bare = tmp_path / "bench.json"
    bare.write_text(json.dumps(raw))
    without = _cli("check", str(bare), "--json")  # its one row cannot be checked: exit 2, the reason in one line
    assert without.returncode == 2 and without.stdout == "" and "lacks hardware and plan" in without.stderr
    done = _cli("check", str(bare), "--json", "--hw", "rtx-pro-6000-server", "--tp", "4")
    row = json.loads(done.stdout)["rows"][0]
    assert row["input"]["hardware"] == "rtx-pro-6000-server" and row["input"]["tp"] == 4
    assert row["predicted"] is not None and row["measured"]["tpot_ms"] == 28.7


# --- issue #11 item 1: rows that are rejected or unpredictable render in the table --------------------------


def test_table_shows_rejected_rows_with_nan_negative_zero_latency(advisor, tmp_path: Path) -> None:
    f = tmp_path / "bad.csv"
    f.write_text("model,hardware,engine,tp,concurrency,input_len,output_len,tpot_ms\n"
                 "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,4,1,1024,256,nan\n"
                 "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,4,1,1024,256,-3\n"
                 "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,4,1,1024,256,0\n"
                 "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,4,1,1024,256,12.5\n")
    r = advisor("check", str(f))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    for cell in ("'nan'", "'-3'", "'0'"):
        row = next(ln for ln in lines if f"tpot_ms={cell} must be a finite number > 0" in ln)
        assert "rejected:" in row and "MiniMaxAI/MiniMax-M2.5" in row
    good = next(ln for ln in lines if ln.startswith("MiniMaxAI/MiniMax-M2.5") and "12.5 / " in ln)
    assert "rejected" not in good
    assert "3 rows rejected" in r.out
    doc = json.loads(advisor("check", str(f), "--json").out)
    measured = [row["measured"]["tpot_ms"] for row in doc["rows"]]
    assert measured == [12.5, None, -3.0, 0.0]  # the predicted row first; rejected cells as numbers where finite


def test_a_bench_json_without_hardware_and_plan_says_pass_hw_and_tp(advisor, tmp_path: Path) -> None:
    raw = json.loads((Path(__file__).parent / "fixtures" / "bench" / "vllm_bench_serve.json").read_text())
    for key in ("hardware", "tp"):
        raw.pop(key)
    bare = tmp_path / "bench.json"
    bare.write_text(json.dumps(raw))
    r = advisor("check", str(bare))  # nothing can be checked: one line that says what to pass
    assert_one_line(r, str(bare), "rejected: this file lacks hardware and plan (a vLLM bench JSON records neither): "
                              "pass --hw and --tp")
    fixed = advisor("check", str(bare), "--hw", "rtx-pro-6000-server", "--tp", "4")
    assert fixed.code == 0 and "rejected" not in fixed.out and "28.7 / " in fixed.out


def test_summary_only(advisor) -> None:
    doc = json.loads(advisor("check", str(CASE_STUDY), "--json", "--summary").out)
    assert set(doc) == {"summary", "calibrated", "unpredicted"} and doc["summary"]["overall"]["predicted"] == 4
    assert doc["unpredicted"] == {}
    assert doc["calibrated"]["rtx-pro-6000-server/vllm"].startswith("shipped: vllm terms pooled")
    r = advisor("check", str(CASE_STUDY), "--summary")
    assert r.code == 0 and "Measured vs predicted" not in r.out and "Summary" in r.out


def test_calibration_file_applies_to_its_own_hardware_and_engine(advisor, tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.csv"
    lines = (BENCH / "silicon_dev.csv").read_text().splitlines()
    mixed.write_text("\n".join([lines[0], *[ln for ln in lines[1:] if ",h100-sxm,vllm," in ln][:3],
                                *[ln for ln in lines[1:] if ",b200-sxm,vllm," in ln][:3]]) + "\n")
    cal = tmp_path / "h100.json"  # a user's own fit of the three H100 rows
    fit = advisor("calibrate", str(mixed), "--hw", "h100-sxm", "-o", str(cal), "--force")
    assert fit.code == 0, fit.err
    doc = json.loads(advisor("check", str(mixed), "--calibration", str(cal), "--json").out)
    how = {row["input"]["hardware"]: row["calibrated"]["how"] for row in doc["rows"] if row["calibrated"]}
    assert how["h100-sxm"] == f"file {cal}" and how["b200-sxm"].startswith("shipped: vllm terms pooled")
    # before / after: the same H100 rows under the shipped terms, beside the user's fit
    before, after = doc["summary_before"]["h100-sxm/vllm"], doc["summary"]["h100-sxm/vllm"]
    assert before["predicted"] == after["predicted"] == 3
    assert before["tpot_ms"]["median_abs_pct"] != after["tpot_ms"]["median_abs_pct"]
    assert doc["summary_before"]["b200-sxm/vllm"] == doc["summary"]["b200-sxm/vllm"]  # not its box: unchanged


def test_check_output_equals_the_row_by_row_predictions() -> None:
    # the columnar path gives exactly what predicting each row on its own gives
    from advisor.calibrate.predict_table import predict_rows
    from advisor.calibrate.rowtable import read_measurements
    from advisor.calibrate.store import terms_for
    from advisor.hardware import load_profile

    rows = read_measurements(BENCH / "silicon_dev.csv").rows
    keys = {(r.hardware, r.engine or "vllm") for r in rows}
    terms = {k: terms_for(load_profile(k[0]), k[1])[0] for k in keys}
    one_by_one = [p.predicted for p in predict_rows(rows, terms)]
    doc = json.loads(_cli("check", str(BENCH / "silicon_dev.csv"), "--json").stdout)
    assert [row["predicted"] for row in doc["rows"]] == one_by_one


def test_trtllm_admits_only_with_room_for_the_whole_output(tmp_path: Path) -> None:
    """TensorRT-LLM's GUARANTEED_NO_EVICT (`capacityScheduler.cpp`, `getRemainingBlocksToCompletion`) admits a
    request only with KV blocks for its whole output: Llama-3.1-70B NVFP4 on one B200 at 128 users, 1024/8192
    tokens, measured a TTFT of 67 s (users queued behind those admitted). Counted at prompt + half the output, as
    vLLM's paged cache grows, all 128 fit and the predicted TTFT was 0.4 s (-99%); reserving the 9,216 tokens,
    the queue comes back (56 s, -17%, with the terms fitted before the change)."""
    rows = (BENCH / "silicon_dev.csv").read_text(encoding="utf-8").splitlines()
    run = "id=2026_04_06_llama_3_1_70b_b200_sxm_trtllm_fp4_agg_1024x8192_c128_tp1_ep1_606"
    row = next(r for r in rows if r.endswith(run))
    path = tmp_path / "one.csv"
    path.write_text(rows[0] + "\n" + row + "\n", encoding="utf-8")
    r = _cli("check", str(path), "--json")
    assert r.returncode == 0, r.stderr
    (doc,) = json.loads(r.stdout)["rows"]
    assert doc["measured"]["ttft_ms"] == pytest.approx(67163.884)
    assert doc["predicted"]["ttft_ms"] == pytest.approx(doc["measured"]["ttft_ms"], rel=0.3)


def test_json_stays_valid_when_an_error_is_infinite(tmp_path: Path) -> None:
    # the case study's first row with its TPOT measured as 1e-320 ms (a positive denormal, so the row is read):
    # the signed error 100 x (15 - 1e-320) / 1e-320 overflows to +inf, written as null; the document parses with
    # NaN and Infinity refused, and no numpy warning reaches stderr
    head, first = CASE_STUDY.read_text().splitlines()[:2]
    cells = first.split(",")
    cells[head.split(",").index("tpot_ms")] = "1e-320"
    f = tmp_path / "tiny.csv"
    f.write_text(f"{head}\n{','.join(cells)}\n")
    r = _cli("check", str(f), "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    row = json.loads(r.stdout, parse_constant=refuse)["rows"][0]
    assert row["measured"]["tpot_ms"] == 1e-320 and 5 < row["predicted"]["tpot_ms"] < 50
    assert row["error_pct"]["tpot_ms"] is None
    measured, predicted = row["measured"]["output_tok_s"], row["predicted"]["output_tok_s"]
    assert row["error_pct"]["output_tok_s"] == pytest.approx(100 * (predicted - measured) / measured, rel=1e-12)


# --- issue #52: nothing checked is an error; a flag value that names nothing is one line; why rows go unpredicted


HEAD = "model,hardware,engine,tp,concurrency,input_len,output_len,tpot_ms\n"


@pytest.mark.parametrize(("body", "says"), [
    ("", "no measurement rows"),  # a header only
    ("MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,x,1,1024,256,12\n"
     "MiniMaxAI/MiniMax-M2.5,rtx-pro-6000-server,vllm,4,1,1024,256,-3\n",
     "none of its 2 rows can be predicted (1 x rejected: tp='x' is not a number; 1 x rejected: tpot_ms='-3'"),
    ("Foo/Bar,rtx-pro-6000-server,vllm,4,1,1024,256,12\n", "its only row cannot be predicted (1 x unknown model: "
                                                           "Foo/Bar"),
])
@pytest.mark.parametrize("json_out", [False, True])
def test_nothing_checked_exits_2_with_one_line(advisor, tmp_path: Path, body: str, says: str,
                                               json_out: bool) -> None:
    f = tmp_path / "m.csv"
    f.write_text(HEAD + body)
    r = advisor("check", str(f), *(["--json"] if json_out else []))
    assert_one_line(r, str(f), says)
    assert r.out == ""


@pytest.mark.parametrize(("flag", "value"), [("--hw", "nope"), ("--model", "Foo/Bar")])
def test_an_unknown_condition_flag_is_one_line_naming_it(advisor, flag: str, value: str) -> None:
    bench = Path(__file__).parent / "fixtures" / "bench" / "vllm_bench_serve.json"
    args = {"--hw": ["--hw", value, "--tp", "4"], "--model": ["--hw", "rtx-pro-6000-server", "--model", value]}[flag]
    r = advisor("check", str(bench), *args)
    assert_one_line(r, f"{flag}: ", value)
    assert r.out == ""
    rank = advisor("rank", "MiniMaxAI/MiniMax-M2.5", "--hw", "nope")  # as rank says it
    assert rank.code == 2 and "unknown hardware id 'nope'" in rank.err and "unknown hardware id 'nope'" in r.err \
        if flag == "--hw" else True


def test_summary_counts_the_unpredicted_rows_and_why(advisor) -> None:
    doc = json.loads(advisor("check", str(BENCH / "silicon_dev.csv"), "--summary", "--json").out)
    overall = doc["summary"]["overall"]
    missing = overall["rows"] + overall["rejected_rows"] - overall["predicted"]
    assert missing > 0 and sum(doc["unpredicted"].values()) == missing
    counts = list(doc["unpredicted"].values())
    assert counts == sorted(counts, reverse=True)  # the commonest reason first
    assert all(reason and n >= 1 for reason, n in doc["unpredicted"].items())
    r = advisor("check", str(BENCH / "silicon_dev.csv"), "--summary")
    assert r.code == 0 and "Measured vs predicted" not in r.out
    assert f"{missing:,} rows of {overall['rows'] + overall['rejected_rows']:,} not predicted, by reason:" in r.out
    for reason, n in list(doc["unpredicted"].items())[:3]:
        assert f"{n:>6,}  {reason}" in r.out
