"""Sweeps that contradict themselves (`advisor/calibrate/consistency.py`): which measured rows a fit leaves out,
on hand-made sweeps and on the shipped measurement files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import CASE_STUDY, cli

from advisor.calibrate.base import architecture_of
from advisor.calibrate.consistency import (
    beyond_peak,
    contradiction,
    dominates,
    inconsistent,
    peak_share,
    slower_than_dominated,
)
from advisor.calibrate.fit import Calibrator
from advisor.calibrate.measurements import Measurement
from advisor.calibrate.pooled import PooledCalibrator, _consistent
from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements
from advisor.hardware import load_profile

BENCH = Path(__file__).resolve().parent / "data" / "bench"


def _row(conc: int, tpot: float, tp: int = 2, n: int = 0) -> Measurement:
    return Measurement(model="Qwen/Qwen3-32B", hardware="h100-sxm", engine="vllm", tp=tp, concurrency=conc,
                       input_len=1024, output_len=256, tpot_ms=tpot, ttft_ms=100.0, source="hand", row=n + 1,
                       file="hand")


def test_a_sweep_whose_step_grows_with_its_batch_is_kept() -> None:
    # TPOT 8 -> 30 ms from 1 to 64 users: users / TPOT 125 -> 2133 tok/s, as a weight-bound step does
    rows = [_row(c, t, n=i) for i, (c, t) in enumerate([(1, 8.0), (8, 9.0), (64, 30.0)])]
    assert inconsistent(rows) == {}


def test_more_users_halving_the_summed_rate_or_cutting_tpot_by_a_third_set_the_sweep_aside() -> None:
    # 1 user at 8 ms (125 tok/s) then 2 users at 42 ms (2 / 42 ms = 48 tok/s < 125 / 2)
    assert "users / TPOT fell from 125 to 48 tok/s from 1 to 2 users" in contradiction(_row(1, 8.0), _row(2, 42.0))
    # 32 users at 15.9 ms, 64 at 9.7 ms: 15.9 / 9.7 = 1.64 > 1.5
    assert "TPOT fell from 15.9 to 9.7 ms from 32 to 64 users" in contradiction(_row(32, 15.9), _row(64, 9.7))
    assert contradiction(_row(32, 14.0), _row(64, 9.7)) is None  # 14 / 9.7 = 1.44: within the spread allowed
    assert contradiction(_row(2, 42.0), _row(1, 8.0)) is None  # fewer users second: not this pair's order
    rows = [_row(1, 8.0, n=0), _row(2, 42.0, n=1), _row(16, 41.5, n=2), _row(1, 8.0, tp=4, n=3)]
    bad = inconsistent(rows)
    assert sorted(bad) == [0, 1, 2]  # the whole TP2 sweep goes; the TP4 row is another run
    assert len(set(bad.values())) == 1


def test_the_shipped_rows_that_contradict_themselves_are_these_three_sweeps() -> None:
    rows = read_measurements(BENCH / "silicon_dev.csv").rows
    bad = inconsistent(rows)
    reasons = {}
    for i, why in bad.items():
        reasons.setdefault(why, []).append(rows[i])
    got = {(rs[0].hardware, rs[0].engine, rs[0].model, rs[0].engine_version, rs[0].tp, rs[0].input_len, len(rs))
           for rs in reasons.values()}
    assert got == {("gb200", "trtllm", "Qwen/Qwen3-32B", "1.3.0rc1", 2, 2000, 6),
                   ("gb200", "trtllm", "Qwen/Qwen3-32B", "1.3.0rc1", 2, 4000, 6),
                   ("h100-sxm", "vllm", "openai/gpt-oss-120b", "0.18.0", 4, 1024, 4)}
    assert ("Qwen/Qwen3-32B on gb200/trtllm 1.3.0rc1 TP2 2000/500: users / TPOT fell from 124 to 48 tok/s from 1 "
            "to 2 users") in reasons  # TPOT 8.07 ms at one user, 41.92 ms at two
    for f in (BENCH / "public_clean.csv", CASE_STUDY):
        assert inconsistent(read_measurements(f).rows) == {}


def test_fits_leave_the_set_aside_rows_out_and_say_why() -> None:
    rows = [r for r in read_measurements(BENCH / "silicon_dev.csv").rows
            if r.hardware == "gb200" and r.model == "Qwen/Qwen3-32B"]
    _, buckets = prepare(rows)
    b = buckets[("gb200", "trtllm")]
    assert len(b.rows) == 15  # 3 TensorRT-LLM 1.2.0rc6 rows and the two 1.3.0rc1 sweeps of 6
    fit = Calibrator(cv=False).fit(b)
    assert fit.rows_used_ == 3 and len(fit.set_aside_) == 12
    pooled = PooledCalibrator().fit(buckets)
    assert pooled.rows_ == {"gb200": 3} and len(pooled.set_aside_["gb200"]) == 2


def test_calibrate_cli_reports_the_rows_it_set_aside(tmp_path: Path) -> None:
    lines = (BENCH / "silicon_dev.csv").read_text().splitlines()
    mine = [ln for ln in lines[1:] if ln.startswith("Qwen/Qwen3-32B,gb200,trtllm,")]
    src = tmp_path / "gb200.csv"
    src.write_text("\n".join([lines[0], *mine]) + "\n")
    out = tmp_path / "cal.json"
    r = cli("calibrate", str(src), "--hw", "gb200", "--engine", "trtllm", "-o", str(out), "--force", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["rows_used"] == 3 and len(doc["rows_set_aside"]) == 12
    reasons = [r["reason"] for r in doc["rows_set_aside"]]
    assert any("TPOT fell from 133.319 to 71.8236 ms from 64 to 128 users" in w for w in reasons)
    assert sorted(r["row"] for r in doc["rows_set_aside"]) == list(range(4, 16))  # data rows 4-15: the 1.3.0rc1 ones


@pytest.mark.parametrize(("prefix", "lengths", "rows", "hw", "says"), [
    # a sweep that contradicts itself
    ("Qwen/Qwen3-32B,gb200,trtllm,1.3.0rc1,", ",2000,500,", 6, "gb200", "every row contradicts its sweep or its GPUs"),
    # a row beyond its GPUs' peak at the users its id names
    ("nvidia/Qwen3-32B-NVFP4,b200-sxm,trtllm,", ",15000,500,", 1, "b200-sxm",
     "at 416 users: its TTFT and TPOT need 3.0x the GPUs' peak FLOP/s"),
])
def test_calibrate_with_only_set_aside_rows_is_one_line_and_exit_2(tmp_path: Path, prefix: str, lengths: str,
                                                                   rows: int, hw: str, says: str) -> None:
    lines = (BENCH / "silicon_dev.csv").read_text().splitlines()
    mine = [ln for ln in lines[1:] if ln.startswith(prefix) and lengths in ln]
    assert len(mine) == rows
    src = tmp_path / "set_aside.csv"
    src.write_text("\n".join([lines[0], *mine]) + "\n")
    out = tmp_path / "cal.json"
    r = cli("calibrate", str(src), "--hw", hw, "--engine", "trtllm", "-o", str(out), "--force")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [src]


def test_a_gpu_outranks_another_only_on_every_spec() -> None:
    b300, b200, h100, rtx = (load_profile(h) for h in ("b300-sxm", "b200-sxm", "h100-sxm", "rtx-pro-6000-server"))
    assert dominates(b300, b200) and dominates(b200, h100) and dominates(b300, h100)
    assert not dominates(b200, b300)  # B300's FP4 rate and memory are higher
    assert not dominates(b200, b200)
    assert not dominates(b200, rtx) and not dominates(rtx, h100)  # another interconnect class


def _on(hw: str, tpot: float, conc: int = 8, version: str = "0.5.9") -> Measurement:
    return Measurement(model="Qwen/Qwen3-32B", hardware=hw, engine="sglang", engine_version=version, tp=2,
                       concurrency=conc, input_len=8192, output_len=1024, tpot_ms=tpot, ttft_ms=100.0,
                       source="hand", row=1, file="hand")


def test_a_sweep_much_slower_than_the_same_run_on_a_gpu_it_outranks_is_set_aside() -> None:
    def runs(b300: list[Measurement], b200: list[Measurement]) -> dict[str, dict[int, str]]:
        return slower_than_dominated({"b300-sxm": (load_profile("b300-sxm"), b300),
                                      "b200-sxm": (load_profile("b200-sxm"), b200)}, architecture_of)

    base = [_on("b200-sxm", 10.0), _on("b200-sxm", 12.0)]  # the lowest of the same run counts
    got = runs([_on("b300-sxm", 16.0, version="0.5.10"), _on("b300-sxm", 20.0, conc=16, version="0.5.10")], base)
    assert sorted(got["b300-sxm"]) == [0, 1]  # the whole sweep: 16 ms is 1.6x 10 ms at 8 users
    assert "1.6x the same run on b200-sxm 0.5.9 (10 ms)" in got["b300-sxm"][0]
    assert runs([_on("b300-sxm", 14.0)], base) == {}  # 1.4x: within the spread allowed
    assert runs([_on("b300-sxm", 9.0)], [_on("b200-sxm", 20.0)]) == {}  # B200 slower: B200 outranks nothing here
    assert runs([_on("b300-sxm", 16.0, conc=4)], base) == {}  # other users: not the same run


def test_the_shipped_rows_slower_than_a_gpu_they_outrank_are_the_b300_deepseek_8k_sweeps() -> None:
    rows = [r for f in (BENCH / "silicon_dev.csv", BENCH / "public_clean.csv", CASE_STUDY)
            for r in read_measurements(f).rows]
    _, buckets = prepare(rows)
    flagged = {}
    for engine in sorted({k[1] for k in buckets}):
        got = slower_than_dominated({k[0]: (b.hw, b.rows) for k, b in buckets.items() if k[1] == engine},
                                    architecture_of)
        flagged.update({(hw, engine): [buckets[(hw, engine)].rows[i] for i in pos] for hw, pos in got.items()})
    assert list(flagged) == [("b300-sxm", "sglang")]
    bad = flagged[("b300-sxm", "sglang")]
    assert len(bad) == 7
    assert {(r.model, r.engine_version, r.input_len) for r in bad} == {("deepseek-ai/DeepSeek-V3", "0.5.10.post1",
                                                                        8192)}
    # what the pooled SGLang fit keeps and says it set aside: its first step, `_consistent` (the least-squares fit
    # after it, ~40 s of CPU on these rows, changes neither; test_fits_leave_the_set_aside_rows_out_and_say_why
    # runs a whole PooledCalibrator.fit)
    kept, why = _consistent({k: b for k, b in buckets.items() if k[1] == "sglang"})
    assert len(kept[("b300-sxm", "sglang")].index) == len(buckets[("b300-sxm", "sglang")].rows) - 7
    assert len(why["b300-sxm"]) == 4  # four sweeps (the receive interval splits a plan's users)


def test_the_peak_share_is_the_closed_loop_rate_times_the_non_expert_gemm_floor() -> None:
    # Qwen3-32B (config.json): hidden 5120, 64 layers, 64 x 128 query and 8 x 128 KV dims, MLP 25600, vocab 151936
    # (untied head): per layer 5120 x (8192 + 2 x 1024) + 8192 x 5120 + 3 x 5120 x 25600 = 487.6 M; x 64 = 31.21 B,
    # with the head 31.98 B non-expert, non-embedding parameters. H100 dense BF16: 989 TFLOP/s; TP2.
    row = _row(64, 20.0)
    _, buckets = prepare([row])
    b = buckets[("h100-sxm", "vllm")]
    params = 64 * (5120 * (8192 + 2 * 1024) + 8192 * 5120 + 3 * 5120 * 25600) + 151936 * 5120
    gemm_s = 2 * params / 2 / 989e12
    assert abs(b.features.dense_gemm_s[0] / gemm_s - 1) < 0.002  # the norms' few parameters
    head_s = 2 * 151936 * 5120 / 2 / 989e12
    rate = 64 / (0.100 + 255 * 0.020)  # users / (TTFT + (O - 1) TPOT), O = 256
    want = rate * (1024 * (gemm_s - head_s) + 256 * gemm_s)
    got = peak_share(b.features, b.hw, b.concurrency, b.input_len, b.output_len, np.array([100.0]),
                     np.array([20.0]))
    assert abs(got[0] / want - 1) < 0.003 and abs(got[0] - 0.50) < 0.01  # 12.3 requests/s x 40.6 ms
    assert beyond_peak(b.rows, b.features, b.hw, b.input_len, b.output_len) == {}
    fast = Measurement(**{**row.model_dump(), "concurrency": 2048, "ttft_ms": 50.0, "tpot_ms": 5.0})
    _, buckets = prepare([fast])  # 2048 users at 5 ms a token: 1,546 requests/s x 40.6 ms
    b = buckets[("h100-sxm", "vllm")]
    why = beyond_peak(b.rows, b.features, b.hw, b.input_len, b.output_len)
    assert list(why) == [0] and "62.7x the GPUs' peak FLOP/s" in why[0]


def test_the_shipped_rows_beyond_their_gpus_peak_are_the_two_qwen3_32b_15000_token_rows() -> None:
    # Their ids say 416 and 448 users (the concurrency the loader takes); the source's cells say 13 and 14
    rows = [r for f in (BENCH / "silicon_dev.csv", BENCH / "public_clean.csv", CASE_STUDY)
            for r in read_measurements(f).rows]
    _, buckets = prepare(rows)
    flagged, most = [], 0.0
    for b in buckets.values():
        share = peak_share(b.features, b.hw, b.concurrency, b.input_len, b.output_len,
                           np.array([r.ttft_ms or np.nan for r in b.rows]),
                           np.array([r.tpot_ms or np.nan for r in b.rows]))
        flagged += [(b.rows[i].hardware, b.rows[i].concurrency, round(float(share[i]), 1))
                    for i in beyond_peak(b.rows, b.features, b.hw, b.input_len, b.output_len)]
        most = max([most, *(s for s in share if np.isfinite(s) and s <= 1)])
    assert sorted(flagged) == [("b200-sxm", 416, 3.0), ("gb200", 448, 2.9)]
    assert 0.4 < most < 0.5  # every other row: at most 0.47 (H100 TensorRT-LLM Llama-3.1-8B, 128 users)
    fit = Calibrator(cv=False).fit(buckets[("b200-sxm", "trtllm")])
    assert [(r.model, r.input_len, r.concurrency) for r, _ in fit.set_aside_] == [
        ("nvidia/Qwen3-32B-NVFP4", 15000, 416)]
