"""scripts/case_study.py: the README's case-study table from the bundled advisor/examples/case_study.csv (in this
process, its held-out fit done once; a bad path through `python -m scripts.case_study`)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CASE_STUDY, Run

from scripts import case_study

pytestmark = pytest.mark.xdist_group("case_study")  # one worker fits the held-out terms (`runs`) once
REPO = Path(__file__).resolve().parents[1]
SCRIPT = "scripts.case_study"  # run as `python -m` from the repo root


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", SCRIPT, *args], capture_output=True, text=True, timeout=60,
                          cwd=REPO)


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    """`case_study.main(ARGS)` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = case_study.main(list(args))
    return subprocess.CompletedProcess([SCRIPT, *args], code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """The script on the bundled CSV, named ("named") and by default ("default"), in this process: the held-out
    fit (`case_study.held_out_terms`, a pooled fit over every other GPU's rows, ~30 s) done once for both."""
    fitted = case_study.held_out_terms()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(case_study, "held_out_terms", lambda: fitted)
        return {"named": _main(str(CASE_STUDY)), "default": _main()}


def test_table_has_every_measured_metric(advisor: Callable[..., Run],
                                         runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    done = runs["named"]
    assert done.returncode == 0, done.stderr
    table, why = done.stdout.split("Why, at one user")
    rows = [line for line in table.splitlines() if line.startswith("| ") and "%" in line]
    # 4 case-study points: two give TPOT and tok/s, two give tok/s only
    assert len(rows) == 6
    measured = [float(r.split("|")[7]) for r in rows]
    assert sorted(measured) == sorted([16.4, 61, 1239, 11.9, 84, 4000])
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        predicted, err = float(cells[7]), cells[8]
        assert predicted > 0
        assert re.fullmatch(r"[+-]\d+%", err), err
        sign = round((predicted - float(cells[6])) / float(cells[6]) * 100)
        assert abs(int(err[:-1]) - sign) <= 1  # the table shows predictions rounded to 0.1
    assert "1024 assumed" in done.stdout
    # the calibrated predictions keep the case study's order: MiniMax TP4 faster per user than Kimi TP8, and
    # MiniMax EP8 serving more tok/s at 128 users than Kimi TP8
    cal = {(c[0], c[1], c[5]): float(c[9]) for r in rows if (c := [x.strip() for x in r.strip("|").split("|")])}
    assert cal["MiniMaxAI/MiniMax-M2.5", "TP4", "TPOT ms"] < cal["nvidia/Kimi-K2.5-NVFP4", "TP8", "TPOT ms"]
    kimi = cal["nvidia/Kimi-K2.5-NVFP4", "TP8", "output tok/s"]
    assert cal["MiniMaxAI/MiniMax-M2.5", "TP8+EP8", "output tok/s"] > kimi
    # where each measured throughput sits on the calibrated curve: EP8's 4,000 tok/s needs more than the 128
    # users the table assumes, and the CLI's prediction at that many users agrees
    users = re.search(r"MiniMaxAI/MiniMax-M2.5 TP8\+EP8, 4,000 tok/s: ([\d,]+) users", done.stdout)
    assert users is not None, done.stdout
    n = int(users.group(1).replace(",", ""))
    assert n > 128
    cli = advisor("predict", "MiniMaxAI/MiniMax-M2.5", "--hw", "rtx-pro-6000-server", "--tp", "8", "--ep", "8",
                  "--concurrency", str(n), "--input-len", "1024", "--output-len", "1024", "--json")
    assert cli.code == 0, cli.err
    assert json.loads(cli.out)["output_tok_s"] >= 4000
    # the why table: each one-user step split by mechanism, shares summing to the step
    for line in (x for x in why.splitlines() if x.startswith("| ") and "%" in x):
        cells = [c.strip() for c in line.strip("|").split("|")]
        step, parts = float(cells[2]), [float(c.split()[0]) for c in cells[3:]]
        assert sum(parts) == pytest.approx(step, abs=0.03)


def test_default_path_is_the_bundled_csv(runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    assert runs["default"].returncode == 0 and runs["named"].stdout
    assert runs["default"].stdout == runs["named"].stdout


def test_missing_file_is_one_line_exit_2(tmp_path: Path) -> None:
    done = run(str(tmp_path / "nope.csv"))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "nope.csv" in done.stderr
    assert done.stdout == ""
