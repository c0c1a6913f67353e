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


def _shipped_cv(hw: str, engine: str = "vllm") -> dict:
    """The shipped pooled fit's held-out (leave-one-model-out) error on this GPU's rows."""
    return json.loads((SHIPPED / f"{engine}.json").read_text())["splits"]["model"][f"{hw}/{engine}"]


def _user_calibration(advisor, tmp_path: Path) -> Path:
    out = tmp_path / "mine.json"
    r = advisor("calibrate", str(CASE_STUDY), "--hw", RTX, "-o", str(out), "--force")
    assert r.code == 0, r.err
    return out


def _noisy_rtx_rows(tmp_path: Path, n: int) -> Path:
    """n public RTX PRO 6000 rows with their tok/s scaled x0.4 and x2.5 in turn: rows no set of terms fits, so
    the fit's held-out error is far worse than the shipped terms' on this GPU."""
    import csv

    src = _rtx_public_rows(tmp_path, n)
    with src.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    for j, r in enumerate(rows):
        if r["output_tok_s"]:
            r["output_tok_s"] = f"{float(r['output_tok_s']) * (0.4 if j % 2 else 2.5):.3f}"
    out = tmp_path / f"noisy{n}.csv"
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out


def test_a_fit_worse_than_the_shipped_terms_is_written_with_a_warning(advisor, tmp_path: Path) -> None:
    # the shipped terms are not replaced (--calibration opts in), so the fit is written, and the user is told
    # that using it would predict worse than the shipped terms do on this GPU
    rows = _noisy_rtx_rows(tmp_path, 9)
    out = tmp_path / "nine.json"
    shipped = _shipped_cv(RTX)["output_tok_s"]
    r = advisor("calibrate", str(rows), "--hw", RTX, "-o", str(out), "--json")
    assert r.code == 0, r.err
    new = json.loads(r.out)["cv"]["output_tok_s"]
    assert new["n"] == 9 and new["median_abs_pct"] > shipped["median_abs_pct"]
    assert (f"held-out median output_tok_s error {new['median_abs_pct']:g}% (n=9) vs {shipped['median_abs_pct']:g}% "
            f"(n={int(shipped['n'])}) of the shipped {RTX}/vllm terms (model held out): --calibration {out} would "
            "predict worse than leaving it out") in r.err
    assert out.exists()


def test_a_fit_worse_than_the_file_it_replaces_is_not_written(advisor, tmp_path: Path) -> None:
    out = tmp_path / "mine.json"
    good = advisor("calibrate", str(_rtx_public_rows(tmp_path, 20)), "--hw", RTX, "-o", str(out), "--force")
    assert good.code == 0, good.err
    before = out.read_bytes()
    r = advisor("calibrate", str(_noisy_rtx_rows(tmp_path, 9)), "--hw", RTX, "-o", str(out))
    assert_one_line(r, "held-out median output_tok_s error", f"worse than {out} ({RTX}/vllm)", "--force")
    assert out.read_bytes() == before


def test_calibration_for_another_engine_is_refused(advisor, tmp_path: Path) -> None:
    mine = _user_calibration(advisor, tmp_path)
    r = advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--engine", "sglang", "--calibration", str(mine))
    assert_one_line(r, f"--calibration {mine}: fitted for vllm, not --engine sglang")
    ok = advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--calibration", str(mine))
    rows = json.loads((SHIPPED / "vllm.json").read_text())["hardware"][RTX]["rows"]
    # the line names the calibration's path, which may wrap (a worker's tmp_path is longer): compare its words
    assert ok.code == 0 and f"in place of the shipped {RTX}/vllm calibration ({rows} rows)" in " ".join(ok.out.split())


@pytest.mark.parametrize(("term", "value", "bounds"), [
    ("request_overhead_us", 1e12, "[0, 2e+06]"),
    ("bw_scale", 0.01, "[0.5, 1.5]"),
    ("layer_overhead_us", 5000.0, "[0, 500]"),
])
def test_a_term_outside_the_fit_bounds_is_refused_on_load(advisor, tmp_path: Path, term: str, value: float,
                                                          bounds: str) -> None:
    doc = json.loads(_user_calibration(advisor, tmp_path).read_text())
    doc["terms"][term] = value
    bad = tmp_path / "edited.json"
    bad.write_text(json.dumps(doc))
    for args in (("predict", "MiniMaxAI/MiniMax-M2.5", "--tp", "4"), ("check", str(CASE_STUDY))):
        r = advisor(*args, "--calibration", str(bad))
        assert_one_line(r, f"--calibration {bad}: terms.{term} = {value:g} is outside the bounds a fit may reach, "
                           f"{bounds}")


def test_a_calibration_with_a_term_this_version_dropped_says_recalibrate(advisor, tmp_path: Path) -> None:
    # files written before the FLOP/s scale was removed (compute runs at the kernel tables' measured rate)
    doc = json.loads(_user_calibration(advisor, tmp_path).read_text())
    doc["terms"]["flops_scale"] = 1.17
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert_one_line(advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--calibration", str(old)),
                    f"--calibration {old}: field terms.flops_scale: a term this version no longer fits (written by an "
                    "older advisor): run `advisor calibrate` again")


def test_an_unknown_engine_in_a_calibration_is_refused(advisor, tmp_path: Path) -> None:
    doc = json.loads(_user_calibration(advisor, tmp_path).read_text())
    doc["engine"] = "tgi"
    bad = tmp_path / "tgi.json"
    bad.write_text(json.dumps(doc))
    assert_one_line(advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--calibration", str(bad)), "field engine")


def test_every_shipped_calibration_loads_and_says_its_bounds() -> None:
    from advisor.calibrate.store import read_pooled

    for f in SHIPPED.glob("*.json"):
        fit = read_pooled(f.stem)
        assert fit is not None and f.name == f"{fit.engine}.json"
        from advisor.cost.terms import at_bound

        # the terms listed as at a bound are exactly the engine-wide ones that sit on one
        assert sorted(fit.bounds_hit) == sorted(n for n, v in fit.engine_wide.model_dump().items() if at_bound(n, v))
