"""Issue #11 items 12-13: `calibrate` refuses a fit that informs nothing or is worse than what it replaces (unless
--force, saying why); a calibration file is checked on load: its engine, and every term within the fit bounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BENCH, CASE_STUDY, REPO, assert_one_line

RTX = "rtx-pro-6000-server"
SHIPPED = REPO / "advisor" / "calibrations"


def _rtx_public_rows(tmp_path: Path, n: int) -> Path:
    lines = (BENCH / "public_clean.csv").read_text().splitlines()
    f = tmp_path / f"rtx{n}.csv"
    f.write_text("\n".join([lines[0], *[ln for ln in lines[1:] if f",{RTX}," in ln][:n]]) + "\n")
    return f


def test_a_fit_that_informs_no_term_is_not_written(advisor, tmp_path: Path) -> None:
    one = tmp_path / "one.csv"
    one.write_text("\n".join(CASE_STUDY.read_text().splitlines()[:2]) + "\n")
    out = tmp_path / "mine.json"
    r = advisor("calibrate", str(one), "--hw", RTX, "-o", str(out))
    assert_one_line(r, f"-o {out}: not written: the rows inform no term", "--force")
    assert not out.exists()
    forced = advisor("calibrate", str(one), "--hw", RTX, "-o", str(out), "--force", "--json")
    assert forced.code == 0 and out.exists()
    assert "advisor: warning: written anyway (--force): the rows inform no term" in forced.err
    assert json.loads(forced.out)["fitted"] == []


def test_a_fit_worse_than_the_shipped_one_is_not_written(advisor, tmp_path: Path) -> None:
    rows = _rtx_public_rows(tmp_path, 9)
    out = tmp_path / "nine.json"
    shipped = json.loads((SHIPPED / f"{RTX}--vllm.json").read_text())["cv"]["output_tok_s"]
    forced = advisor("calibrate", str(rows), "--hw", RTX, "-o", str(tmp_path / "forced.json"), "--force", "--json")
    assert forced.code == 0, forced.err
    new = json.loads(forced.out)["cv"]["output_tok_s"]
    assert new["n"] == 9 and new["median_abs_pct"] > shipped["median_abs_pct"]  # 38.4% vs 7.12%
    r = advisor("calibrate", str(rows), "--hw", RTX, "-o", str(out))
    assert_one_line(r, f"held-out median output_tok_s error {new['median_abs_pct']:g}% (n=9) vs "
                       f"{shipped['median_abs_pct']:g}% (n={int(shipped['n'])})",
                    f"worse than the shipped {RTX}/vllm calibration", "--force")
    assert not out.exists()


def test_a_refit_no_worse_than_the_shipped_one_is_written_with_a_warning_beyond_target(advisor,
                                                                                        tmp_path: Path) -> None:
    out = tmp_path / "h100.json"
    r = advisor("calibrate", str(BENCH / "silicon_dev.csv"), "--hw", "h100-sxm", "--engine", "vllm", "-o", str(out))
    assert r.code == 0, r.err
    written = json.loads(out.read_text())
    shipped = json.loads((SHIPPED / "h100-sxm--vllm.json").read_text())["cv"]
    assert written["cv"]["ttft_ms"]["median_abs_pct"] <= shipped["ttft_ms"]["median_abs_pct"]  # no worse: written
    assert r.err.strip() == (f"advisor: warning: held-out median ttft_ms error "
                             f"{written['cv']['ttft_ms']['median_abs_pct']:g}% is beyond the 25% target")
    assert written["rows_used"] == 167


def test_calibration_for_another_engine_is_refused(advisor) -> None:
    vllm = SHIPPED / f"{RTX}--vllm.json"
    r = advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--engine", "sglang", "--calibration", str(vllm))
    assert_one_line(r, f"--calibration {vllm}: fitted for vllm, not --engine sglang")
    ok = advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--calibration", str(vllm))
    assert ok.code == 0 and f"in place of the shipped {RTX}/vllm calibration (24 rows)" in ok.out


@pytest.mark.parametrize(("term", "value", "bounds"), [
    ("request_overhead_us", 1e12, "[0, 2e+06]"),
    ("mem_bw_eff", 0.01, "[0.3, 1]"),
    ("layer_overhead_us", 5000.0, "[0, 500]"),
])
def test_a_term_outside_the_fit_bounds_is_refused_on_load(advisor, tmp_path: Path, term: str, value: float,
                                                          bounds: str) -> None:
    doc = json.loads((SHIPPED / f"{RTX}--vllm.json").read_text())
    doc["terms"][term] = value
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc))
    for args in (("predict", "MiniMaxAI/MiniMax-M2.5", "--tp", "4"), ("check", str(CASE_STUDY))):
        r = advisor(*args, "--calibration", str(bad))
        assert_one_line(r, f"--calibration {bad}: terms.{term} = {value:g} is outside the bounds a fit may reach, "
                           f"{bounds}")


def test_an_unknown_engine_in_a_calibration_is_refused(advisor, tmp_path: Path) -> None:
    doc = json.loads((SHIPPED / f"{RTX}--vllm.json").read_text())
    doc["engine"] = "tgi"
    bad = tmp_path / "tgi.json"
    bad.write_text(json.dumps(doc))
    assert_one_line(advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--calibration", str(bad)), "field engine")


def test_every_shipped_calibration_loads() -> None:
    from advisor.calibrate.store import read_calibration

    for f in SHIPPED.glob("*.json"):
        cal = read_calibration(f)
        assert f.name == f"{cal.hardware}--{cal.engine}.json"
