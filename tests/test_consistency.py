"""Sweeps that contradict themselves (`advisor/calibrate/consistency.py`): which measured rows a fit leaves out,
on hand-made sweeps and on the shipped measurement files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import CASE_STUDY

from advisor.calibrate.consistency import contradiction, inconsistent
from advisor.calibrate.fit import Calibrator
from advisor.calibrate.measurements import Measurement
from advisor.calibrate.pooled import PooledCalibrator
from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements

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


def test_the_shipped_rows_that_contradict_themselves_are_these_four_sweeps() -> None:
    rows = read_measurements(BENCH / "silicon_dev.csv").rows
    bad = inconsistent(rows)
    reasons = {}
    for i, why in bad.items():
        reasons.setdefault(why, []).append(rows[i])
    got = {(rs[0].hardware, rs[0].engine, rs[0].model, rs[0].engine_version, rs[0].tp, rs[0].input_len, len(rs))
           for rs in reasons.values()}
    assert got == {("gb200", "trtllm", "Qwen/Qwen3-32B", "1.3.0rc1", 2, 2000, 6),
                   ("gb200", "trtllm", "Qwen/Qwen3-32B", "1.3.0rc1", 2, 4000, 6),
                   ("gb200", "trtllm", "deepseek-ai/DeepSeek-R1", None, 28, 8192, 7),
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
    r = subprocess.run([sys.executable, "-m", "advisor.cli", "calibrate", str(src), "--hw", "gb200", "--engine",
                        "trtllm", "-o", str(out), "--force", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["rows_used"] == 3 and len(doc["rows_set_aside"]) == 12
    reasons = [r["reason"] for r in doc["rows_set_aside"]]
    assert any("TPOT fell from 133.319 to 71.8236 ms from 64 to 128 users" in w for w in reasons)
    assert sorted(r["row"] for r in doc["rows_set_aside"]) == list(range(4, 16))  # data rows 4-15: the 1.3.0rc1 ones


def test_calibrate_with_only_contradicting_rows_is_one_line_and_exit_2(tmp_path: Path) -> None:
    lines = (BENCH / "silicon_dev.csv").read_text().splitlines()
    mine = [ln for ln in lines[1:] if ln.startswith("Qwen/Qwen3-32B,gb200,trtllm,1.3.0rc1,") and ",2000,500," in ln]
    assert len(mine) == 6
    src = tmp_path / "bad_sweep.csv"
    src.write_text("\n".join([lines[0], *mine]) + "\n")
    out = tmp_path / "cal.json"
    r = subprocess.run([sys.executable, "-m", "advisor.cli", "calibrate", str(src), "--hw", "gb200", "--engine",
                        "trtllm", "-o", str(out), "--force"], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "every sweep contradicts itself" in r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [src]
