"""Issue #52: human output a person can act on and a terminal survives. The 80% interval beside TTFT, TPOT and tok/s
(and what weakens it: a borrowed calibration, a term at its bound); any terminal width; tables whose numbers never
split; text from files and arguments shown, never acted on by the terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import BENCH, CASE_STUDY, cli

from advisor.cost.interval import interval

MINIMAX, KIMI = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"
HOSTILE = "\x1b]0;pwned\x07\x1b[2J[bold]M[/bold]"  # retitles the window, clears the screen; rich markup


# --- the 80% interval -----------------------------------------------------------------------------------------


def test_interval_of_tok_s_follows_from_ttft_and_tpot() -> None:
    # one request of 101 tokens: TTFT 100 ms, then 100 decode steps of 10 ms: lifetime 1,100 ms, 101 / 1.1 s =
    # 91.8 tok/s. TPOT's held-out errors p10 -20%, p90 +25% put TPOT in [10 / 1.25, 10 / 0.8] = [8, 12.5] ms;
    # TTFT's (0, 0) keep it at 100 ms: lifetime [100 + 800, 100 + 1,250] ms, tok/s [101 / 1.35, 101 / 0.9]
    cal = {"residual_pct": {"tpot_ms": (-20.0, 25.0), "ttft_ms": (0.0, 0.0)}}
    iv = interval(cal, ttft_ms=100.0, tpot_ms=10.0, output_tok_s=101 / 1.1, running=1, output_len=101)
    assert iv is not None
    assert (iv["tpot_ms_low"], iv["tpot_ms_high"]) == pytest.approx((8.0, 12.5), rel=1e-12)
    assert (iv["ttft_ms_low"], iv["ttft_ms_high"]) == pytest.approx((100.0, 100.0), rel=1e-12)
    assert (iv["per_user_tok_s_low"], iv["per_user_tok_s_high"]) == pytest.approx((80.0, 125.0), rel=1e-12)
    assert (iv["output_tok_s_low"], iv["output_tok_s_high"]) == pytest.approx((101 / 1.35, 101 / 0.9), rel=1e-12)
    # a user's own fit stores TPOT's spread only: TTFT has no interval, and its part of the lifetime stays put
    own = interval({"tpot_residual_pct": (-20.0, 25.0)}, ttft_ms=100.0, tpot_ms=10.0, output_tok_s=101 / 1.1,
                   running=1, output_len=101)
    assert own is not None and "ttft_ms_low" not in own
    assert own["output_tok_s_low"] == pytest.approx(101 / 1.35, rel=1e-12)
    assert interval({"how": "none: priors", "rows": 0}, ttft_ms=100.0, tpot_ms=10.0, output_tok_s=91.8, running=1,
                    output_len=101) is None


def _span(doc: dict, metric: str, decimals: int) -> str:
    iv = doc["interval"]
    return f"{iv[metric + '_low']:,.{decimals}f}-{iv[metric + '_high']:,.{decimals}f}"


def test_predict_prints_the_interval_beside_each_number(advisor) -> None:
    doc = json.loads(advisor("predict", MINIMAX, "--tp", "4", "--json").out)
    iv = doc["interval"]
    for m in ("ttft_ms", "tpot_ms", "per_user_tok_s", "output_tok_s"):  # the shipped spread straddles 0
        assert iv[f"{m}_low"] < doc[m] < iv[f"{m}_high"], m
    r = advisor("predict", MINIMAX, "--tp", "4")
    assert r.code == 0, r.err
    assert f"TTFT {doc['ttft_ms']:,.0f} ms ({_span(doc, 'ttft_ms', 0)})" in r.out
    assert f"TPOT {doc['tpot_ms']:,.1f} ms ({_span(doc, 'tpot_ms', 1)})" in r.out
    assert f"{doc['per_user_tok_s']:,.0f} tok/s ({_span(doc, 'per_user_tok_s', 0)}) per user" in r.out
    assert f"{doc['output_tok_s']:,.0f} tok/s ({_span(doc, 'output_tok_s', 0)}) total" in r.out
    assert "ranges: 80% intervals from the calibration's held-out errors" in r.out
    assert "borrowed" not in r.out  # rtx-pro-6000-server/vllm was measured


def test_rank_prints_the_interval_in_its_table(advisor) -> None:
    docs = json.loads(advisor("rank", MINIMAX, KIMI, "--json").out)
    r = advisor("rank", MINIMAX, KIMI)
    assert r.code == 0, r.err
    for d in docs:
        row = next(ln for ln in r.out.splitlines() if f" {d['model']} " in ln and "│" in ln)
        assert f"{d['ttft_ms']:,.0f} ({_span(d, 'ttft_ms', 0)})" in row
        assert f"{d['tpot_ms']:,.1f} ({_span(d, 'tpot_ms', 1)})" in row
        assert (f"{d['per_user_tok_s']:,.0f} ({_span(d, 'per_user_tok_s', 0)}) / "
                f"{d['output_tok_s']:,.0f} ({_span(d, 'output_tok_s', 0)})") in row
    assert "ranges: 80% intervals" in r.out


def test_a_borrowed_calibration_is_said(advisor) -> None:
    # no vLLM row was measured on an H200: its terms are the engine-wide ones of the GPUs that were
    doc = json.loads(advisor("predict", MINIMAX, "--tp", "4", "--hw", "h200-sxm", "--json").out)
    assert doc["calibrated"]["rows"] == 0 and doc["calibrated"]["how"].startswith("engine-wide vllm terms")
    for args in (("predict", MINIMAX, "--tp", "4"), ("rank", MINIMAX)):
        r = advisor(*args, "--hw", "h200-sxm")
        assert r.code == 0, r.err
        assert "calibration borrowed: h200-sxm has no measurements, its terms are the engine-wide vllm ones" in r.out
    assert "borrowed" not in advisor("rank", MINIMAX).out


def test_the_readme_calibration_names_its_term_at_a_bound(advisor, tmp_path: Path) -> None:
    # the README's `advisor calibrate ... -o my.json`: a term ends on its bound; rank --calibration must say it
    own = tmp_path / "my.json"
    fit = advisor("calibrate", str(CASE_STUDY), str(BENCH / "public_clean.csv"), "--hw", "rtx-pro-6000-server",
                  "-o", str(own))
    assert fit.code == 0, fit.err
    bounds = json.loads(own.read_text())["bounds_hit"]
    assert bounds, "the README example hits a bound; this test guards what is said about it"
    doc = json.loads(advisor("rank", MINIMAX, "--calibration", str(own), "--json").out)
    assert doc[0]["calibrated"]["bounds_hit"] == bounds
    r = advisor("rank", MINIMAX, "--calibration", str(own))
    assert r.code == 0, r.err
    said = f"{', '.join(bounds)} at {'its' if len(bounds) == 1 else 'their'} fit bound"
    words = " ".join(r.out.split())  # the calibration line wraps at the terminal's width
    assert said in words and f"at a fit bound (the data push past it; treat with care): {', '.join(bounds)}" in words
    p = advisor("predict", MINIMAX, "--tp", "4", "--calibration", str(own))
    assert said in p.out


# --- any terminal width ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("columns", ["0", "00", "-3", "abc", ""])
@pytest.mark.parametrize(("args", "shows"), [
    (("rank", MINIMAX), "tok/s"), (("predict", MINIMAX, "--tp", "4"), "TPOT"), (("fit", MINIMAX, "--tp", "4"), "fits"),
    (("inspect", MINIMAX), "attention"), (("hw", "list"), "rtx-pro-6000-server")])
def test_a_width_that_is_no_width_falls_back_to_80(args: tuple[str, ...], shows: str, columns: str) -> None:
    r = cli(*args, env={"COLUMNS": columns, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    assert shows in r.stdout and (args[0] == "hw" or MINIMAX.split("/")[0] in r.stdout)
    table = [ln for ln in r.stdout.splitlines() if ln[:1] in "┏┃┡│└"] if args[0] != "predict" else \
        r.stdout.splitlines()
    assert table and max(len(ln) for ln in table) <= 80  # not a terminal: 80 columns


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("┃│").split("┃" if "┃" in line else "│")]


def _columns(out: str, first: int) -> tuple[list[str], list[list[str]]]:
    """The table's headers (lines of a header joined by a space) and its rows (lines of a row joined likewise; a
    row starts where column `first` has text)."""
    lines = out.splitlines()
    top = next(i for i, ln in enumerate(lines) if ln.startswith("┏"))
    mid = next(i for i, ln in enumerate(lines) if ln.startswith("┡"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("└"))
    heads = [_cells(ln) for ln in lines[top + 1:mid]]
    headers = [" ".join(h[j] for h in heads if h[j]) for j in range(len(heads[0]))]
    rows: list[list[str]] = []
    for ln in lines[mid + 1:end]:
        cells = _cells(ln)
        if cells[first] or not rows:
            rows.append(cells)
        else:  # a continuation line of the row above
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
    return headers, rows


def test_fit_at_80_columns_never_splits_a_number(advisor) -> None:
    docs = json.loads(advisor("fit", "--tp", "4", "--json").out)
    r = advisor("fit", "--tp", "4", columns=80)
    assert r.code == 0, r.err
    headers, rows = _columns(r.out, 1)
    left_out = next((ln for ln in r.out.splitlines() if ln.startswith("(columns left out")), "")
    gib = {"weights/GPU": lambda d: d["per_gpu"]["weights_bytes"],
           "KV room/GPU": lambda d: d["per_gpu"]["kv_cache_bytes"]}
    for name in ("model", "plan", "fits", "weights/GPU", "act+other/GPU", "KV room/GPU", "KV tokens", "max seqs",
                 "why not"):
        assert name in headers or name in left_out, (name, headers, left_out)  # shown whole, or said left out
    assert "model" in headers and "fits" in headers and "KV tokens" in headers
    assert len(rows) == len(docs)
    for d, row in zip(docs, rows, strict=True):
        cell = dict(zip(headers, row, strict=True))
        assert cell["KV tokens"] == f"{d['kv_cache_tokens']:,}"
        for name, value in gib.items():
            if name in cell and d["per_gpu"]:
                assert cell[name] == f"{value(d) / 2**30:,.1f} GiB"
    assert max(len(ln) for ln in r.out.splitlines() if ln[:1] in "┏┃┡│└") <= 80


@pytest.mark.parametrize(("args", "tpot"), [((), True), (("--objective", "throughput", "--concurrency", "64"), False)])
def test_rank_at_80_columns_keeps_what_its_title_announces(advisor, args: tuple[str, ...], tpot: bool) -> None:
    docs = json.loads(advisor("rank", MINIMAX, KIMI, *args, "--json").out)
    r = advisor("rank", MINIMAX, KIMI, *args, columns=80)
    assert r.code == 0, r.err
    assert "quality:" in r.out and "tok/s" in r.out.split("┏")[0]  # the title names the scale and the score ...
    headers, rows = _columns(r.out, 0)
    metric = "tok/s user / total"
    assert "quality" in headers and metric in headers, headers  # ... and both stay
    assert ("TPOT ms" in headers) == tpot, headers  # TPOT too where there is room once intervals go under
    for d, row in zip(docs, rows, strict=True):
        cell = dict(zip(headers, row, strict=True))
        assert cell["quality"] == f"{d['quality']:g} ±{d['quality_ci95']:g}"
        # per user, then the whole deployment's total (its replicas summed), each interval under its value
        assert re.fullmatch(f"{d['per_user_tok_s']:,.0f} / [0-9,]+ {_span(d, 'per_user_tok_s', 0)} / "
                            "[0-9,]+-[0-9,]+", cell[metric]), cell[metric]
        if tpot:
            assert cell["TPOT ms"] == f"{d['tpot_ms']:,.1f} {_span(d, 'tpot_ms', 1)}"  # the interval under it
    assert max(len(ln) for ln in r.out.splitlines() if ln[:1] in "┏┃┡│└") <= 80


# --- text from files and arguments is shown, not acted on ---------------------------------------------------


def _raw_controls(text: str) -> list[str]:
    return re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)


def test_control_characters_in_a_csv_cell_are_escaped(advisor, tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,engine,tp,concurrency,input_len,output_len,tpot_ms,source\n"
                 f"{MINIMAX},rtx-pro-6000-server,vllm,4,1,1024,256,12,{HOSTILE}\n"
                 f"{HOSTILE},rtx-pro-6000-server,vllm,4,1,1024,256,12,x\n")
    for args in ((), ("--summary",)):
        r = advisor("check", str(f), *args)
        assert r.code == 0, r.err
        assert not _raw_controls(r.out + r.err), _raw_controls(r.out + r.err)
        assert "\\x1b]0;pwned\\x07\\x1b[2J[bold]M[/bold]" in r.out  # as it is in the file, escaped
    doc = json.loads(advisor("check", str(f), "--json").out)  # JSON escapes them itself
    assert any(row["input"]["model"] == HOSTILE for row in doc["rows"])


@pytest.mark.parametrize("args", [("rank", MINIMAX, HOSTILE), ("inspect", MINIMAX, HOSTILE), ("predict", HOSTILE),
                                  ("fit", MINIMAX, HOSTILE, "--tp", "4"), ("rank", "--" + HOSTILE)])
def test_control_characters_and_markup_in_arguments_print_literally(advisor, args: tuple[str, ...]) -> None:
    r = advisor(*args)
    assert r.code in (0, 2), r.err
    assert not _raw_controls(r.out + r.err), _raw_controls(r.out + r.err)
    assert "[bold]M[/bold]" in r.out + r.err and "\\x1b[2J" in r.out + r.err


def test_control_characters_in_a_profile_and_a_calibration_file_are_escaped(advisor, tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[1] / "hwprofiles" / "h100-sxm.toml").read_text()
    profile = tmp_path / "box.toml"
    profile.write_text(text.replace('name = "8x H100 SXM5 80GB (NVLink4 / NVSwitch)"',
                                    'name = "8x H100 \\u001b[2J[bold]box[/bold]"', 1))
    rows = tmp_path / "m.csv"
    rows.write_text(CASE_STUDY.read_text() + f"{MINIMAX},rtx-pro-6000-server,vllm,,,{HOSTILE},1,1,1,1,,,,12,,x\n")
    for args in (("hw", "show", str(profile)), ("rank", MINIMAX, "--hw", str(profile)),
                 ("calibrate", str(rows), "--hw", "rtx-pro-6000-server", "-o", str(tmp_path / "c.json"), "--force")):
        r = advisor(*args)
        assert r.code == 0, r.err
        assert not _raw_controls(r.out + r.err), (args, _raw_controls(r.out + r.err))
        assert "[bold]" in r.out and "\\x1b" in r.out, args
