"""`rank --plot`: the figure's series and bars are the cost model's and the rows' numbers, the targets are drawn, the
top rows only, each in its own style, one word per meaning; files are valid."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import cli
from matplotlib.colors import to_hex
from matplotlib.text import Text

from advisor import catalog
from advisor.calibrate.store import terms_for
from advisor.commands import options as opt
from advisor.cost.plan import Plan
from advisor.cost.prediction import BREAKDOWN
from advisor.cost.sweep import evaluate, make_case
from advisor.decide.choose import rank
from advisor.decide.query import Query
from advisor.report.figfile import layout_problems
from advisor.report.plots import MEMORY_PARTS, MEMORY_WORDS, STEP_WORDS, TOP, GiB, rank_figure, save
from advisor.resolve import Resolved

MODELS = ("MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5")
HW = "rtx-pro-6000-server"


def _resolved(model: str) -> Resolved:
    entry = catalog.lookup(model)
    assert entry is not None, model
    return Resolved(ref=model, arch=entry.arch, source=f"catalog:{entry.id}")


def _ranking(q: Query) -> dict[str, Any]:
    hw = opt.hardware(HW, None)
    settings = opt.settings(engine="vllm", engine_version=None, max_model_len=None, kv_cache_dtype="auto",
                            gpu_memory_utilization=0.92, weight_dtype=None)
    terms, calibrated = terms_for(hw, "vllm", None)
    resolved = [_resolved(m) for m in MODELS]
    ranking = rank(resolved, hw, settings, terms, q, calibrated)
    assert not ranking.unranked and sorted(d.model for d in ranking.rows) == sorted(MODELS)
    fig = rank_figure(ranking, hw, settings)
    rows = [d.model_dump(mode="json") for d in ranking.rows]
    return {"hw": hw, "settings": settings, "terms": terms, "q": q, "resolved": resolved, "rows": rows,
            "fig": fig, "ranking": ranking}


@pytest.fixture(scope="module")
def ranked() -> dict[str, Any]:
    return _ranking(Query(objective="throughput", concurrency=64, input_len=1024, output_len=1024))


# TTFT limit between the first model's TTFT at few users and at many (tests/test_plots.py: test_targets_are_drawn
# checks that both kinds of point occur)
MAX_TTFT_MS = 200.0


@pytest.fixture(scope="module")
def goodput() -> dict[str, Any]:
    return _ranking(Query(objective="goodput", concurrency=64, input_len=1024, output_len=1024, max_tpot_ms=50,
                          max_ttft_ms=MAX_TTFT_MS))


def _evaluated(ranked: dict[str, Any], d: dict[str, Any]) -> dict[str, np.ndarray]:
    """The cost model over the query's grid for one row's plan (what the figure must draw)."""
    p = d["plan"]
    case = make_case(_resolved(d["model"]).arch, Plan(tp=p["tp"], pp=p["pp"], dp=p["dp"], ep=p["ep"]), ranked["hw"],
                     ranked["settings"])
    out = evaluate([case], ranked["terms"], np.array(ranked["q"].grid(), float), np.array([1024]),
                   np.array([1024])).out
    return {k: v[0, :, 0] for k, v in out.items()}


def _plan_label(d: dict[str, Any]) -> str:
    """A row's plan as the figure names it: "r x PLAN" for r replicas."""
    r = d["deployment"]["replicas"] if d["deployment"] else 1
    return f"{r} x {d['plan']['label']}" if r > 1 else d["plan"]["label"]


def _named(ax: Any) -> list[Any]:
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def test_panel_a_one_curve_per_row_with_cost_model_values(ranked: dict[str, Any]) -> None:
    ax = ranked["fig"].axes[0]
    named = _named(ax)
    assert len(named) == len(MODELS)  # one labelled series per ranked row, nothing else
    grid = ranked["q"].grid()
    stars = [ln for ln in ax.get_lines() if ln.get_label().endswith("operating point")]
    for d, line, star in zip(ranked["rows"], named, stars, strict=True):
        r = d["deployment"]["replicas"] if d["deployment"] else 1
        assert line.get_label() == f"#{d['rank']} {d['model'].rsplit('/', 1)[-1]} ({_plan_label(d)})"
        res = _evaluated(ranked, d)
        # r replicas at c users each: r x the plan's tok/s at c, at the plan's per-user speed there
        np.testing.assert_allclose(line.get_ydata(), r * res["output_tok_s"], rtol=1e-12)
        np.testing.assert_allclose(line.get_xdata(), res["per_user_tok_s"], rtol=1e-12)
        # the row's operating point is starred: the deployment's summed tok/s at the busiest replica's speed
        total = d["deployment"]["output_tok_s"] if d["deployment"] else d["output_tok_s"]
        assert (star.get_xdata()[0], star.get_ydata()[0]) == pytest.approx((d["per_user_tok_s"], total), rel=1e-12)
        if r == 1 or d["workload"]["concurrency"] * r == d["deployment"]["users"]:  # an even split: on the curve
            k = grid.index(d["workload"]["concurrency"])
            assert star.get_ydata()[0] == pytest.approx(line.get_ydata()[k], rel=1e-12)
        assert star.get_color() == line.get_color()
        # labelled on the figure, in the row's colour
        (text,) = [t for t in ax.texts if t.get_text() == f"#{d['rank']} {d['model'].rsplit('/', 1)[-1]}"]
        assert text.get_color() == line.get_color()
    assert "tok/s" in ax.get_xlabel() and "tok/s" in ax.get_ylabel()
    assert len({ln.get_color() for ln in named}) == len(named)


def test_targets_are_drawn(goodput: dict[str, Any]) -> None:
    """The TPOT limit is the vertical line at 1000 / limit tok/s per user; points beyond the TTFT limit are hollow."""
    ax = goodput["fig"].axes[0]
    (tpot,) = [ln for ln in ax.get_lines() if ln.get_label() == "_TPOT 50 ms"]
    assert list(tpot.get_xdata()) == [1000 / 50] * 2
    for d in goodput["rows"]:
        name = f"#{d['rank']} {d['model'].rsplit('/', 1)[-1]}"
        res = _evaluated(goodput, d)
        beyond = res["ttft_s"] * 1e3 > MAX_TTFT_MS
        (filled,) = [ln for ln in ax.get_lines() if ln.get_label() == f"{name} ({_plan_label(d)})"]
        (hollow,) = [ln for ln in ax.get_lines() if ln.get_label() == f"_{name} beyond TTFT"]
        np.testing.assert_allclose(hollow.get_xdata(), res["per_user_tok_s"][beyond], rtol=1e-12)
        np.testing.assert_allclose(filled.get_xdata(), res["per_user_tok_s"][~beyond], rtol=1e-12)
        assert hollow.get_markerfacecolor() == "white"
    first = _evaluated(goodput, goodput["rows"][0])["ttft_s"] * 1e3
    assert first.min() < MAX_TTFT_MS < first.max()  # both kinds of point occur
    key = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("TPOT 50 ms" in t for t in key) and any(f"TTFT {MAX_TTFT_MS:g} ms" in t for t in key)
    assert "TPOT <= 50 ms and TTFT <= 200 ms" in goodput["fig"].get_suptitle()


def test_top_rows_only_each_its_own_style(ranked: dict[str, Any]) -> None:
    """A ranking longer than TOP draws its first TOP rows, each in its own colour and marker, on the canvas."""
    many = replace(ranked["ranking"], rows=ranked["ranking"].rows * 5)
    fig = rank_figure(many, ranked["hw"], ranked["settings"])
    named = _named(fig.axes[0])
    assert len(named) == TOP and len({(ln.get_color(), ln.get_marker()) for ln in named}) == TOP
    assert [len(c.patches) for c in fig.axes[1].containers] == [TOP] * len(BREAKDOWN)
    assert f"top {TOP} of {len(many.rows)} ranked" in fig.get_suptitle()
    assert layout_problems(fig) == []


def _stacks(ax: Any) -> dict[str, list[float]]:
    return {c.get_label(): [p.get_width() for p in c.patches] for c in ax.containers}


def test_panel_b_stacks_are_the_rows_breakdown(ranked: dict[str, Any]) -> None:
    ax = ranked["fig"].axes[1]
    stacks = _stacks(ax)
    assert list(stacks) == [STEP_WORDS[p] for p in BREAKDOWN]
    for part in BREAKDOWN:
        assert stacks[STEP_WORDS[part]] == pytest.approx([d["breakdown_ms"][part] for d in ranked["rows"]],
                                                         rel=1e-12)
    tops = [sum(v[i] for v in stacks.values()) for i in range(len(MODELS))]
    assert tops == pytest.approx([sum(d["breakdown_ms"].values()) for d in ranked["rows"]])
    assert "ms" in ax.get_xlabel()


def test_panel_c_memory_stacks_to_capacity(ranked: dict[str, Any]) -> None:
    ax = ranked["fig"].axes[2]
    stacks = {k: v for k, v in _stacks(ax).items()}
    assert list(stacks) == [MEMORY_WORDS[p] for p in MEMORY_PARTS]
    for i, d in enumerate(ranked["rows"]):
        pg = d["per_gpu"]
        assert stacks["weights"][i] * GiB == pytest.approx(pg["weights_bytes"])
        assert stacks["KV cache"][i] * GiB == pytest.approx(pg["kv_cache_bytes"])
        assert stacks["activations"][i] * GiB == pytest.approx(pg["activation_bytes"])
        assert stacks[MEMORY_WORDS["runtime"]][i] * GiB == pytest.approx(pg["overhead_bytes"])
        total = sum(v[i] for v in stacks.values()) * GiB
        assert total == pytest.approx(pg["capacity_bytes"], rel=1e-6)
    capacity = [ln for ln in ax.get_lines() if ln.get_label().startswith("capacity")]
    assert len(capacity) == 1
    # the capacity vLLM budgets from is what CUDA reports (hwprofiles cuda_total_bytes), not nvidia-smi's total
    assert capacity[0].get_xdata()[0] * GiB == pytest.approx(ranked["hw"].gpu.cuda_total_bytes)
    assert "GiB" in ax.get_xlabel()


def test_one_word_per_meaning(ranked: dict[str, Any]) -> None:
    """Across panels (b) and (c) a part's first word names one thing: the same word, the same colour, and no two
    colours under one word ("overhead" named fixed latency in (b) and non-torch memory in (c))."""
    word_color: dict[str, set[str]] = {}
    color_word: dict[str, set[str]] = {}
    for ax in ranked["fig"].axes[1:]:
        for c in ax.containers:
            word, color = c.get_label().split()[0], to_hex(c.patches[0].get_facecolor())
            word_color.setdefault(word, set()).add(color)
            color_word.setdefault(color, set()).add(word)
    assert all(len(v) == 1 for v in word_color.values()), word_color
    assert all(len(v) == 1 for v in color_word.values()), color_word
    assert word_color["weights"] and word_color["KV"]  # shared between the panels
    fig = ranked["fig"]
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert not [t for t in texts if "overhead" in t]


def test_title_names_hardware(ranked: dict[str, Any]) -> None:
    title = ranked["fig"].get_suptitle()
    assert ranked["hw"].id in title and ranked["hw"].name in title


def test_save_is_atomic_and_rejects_other_formats(ranked: dict[str, Any], tmp_path: Path) -> None:
    from advisor.errors import AdvisorError

    out = tmp_path / "f.png"
    save(ranked["fig"], out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]  # no temp file left behind
    with pytest.raises(AdvisorError, match="--plot"):
        save(ranked["fig"], tmp_path / "f.pdf")
    with pytest.raises(AdvisorError, match="--plot"):
        save(ranked["fig"], tmp_path / "missing" / "f.png")


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`advisor rank MODELS ARGS` offline, in this process (`conftest.cli`: what `python -m advisor.cli` gives)."""
    return cli("rank", *MODELS, *args, env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(home)})


def test_cli_writes_png_and_svg(tmp_path: Path) -> None:
    png, svg = tmp_path / "x.png", tmp_path / "x.svg"
    r = _cli("--plot", str(png), home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = _cli("--objective", "throughput", "--plot", str(svg), "--json", home=tmp_path)
    assert r.returncode == 0, r.stderr
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cli_rejects_other_extension(tmp_path: Path) -> None:
    r = _cli("--plot", str(tmp_path / "x.txt"), home=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--plot" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "x.txt").exists()


def test_a_row_ranked_with_mtp_is_starred_where_mtp_puts_it(advisor, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`--speculative auto` keeps MTP for DeepSeek-V3 at one user on H200 (docs/capacity.md) while the ranking's
    sweep holds the plan without drafts: the star is the row's own point, the curve (without MTP) dashed, and the
    label says which is which."""
    from matplotlib.figure import Figure

    seen: list[Any] = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (seen.append(self), original(self, *a, **k)))
    r = advisor("rank", "deepseek-ai/DeepSeek-V3", "--hw", "h200-sxm", "--speculative", "auto", "--plot",
                str(tmp_path / "mtp.png"), "--json")
    assert r.code == 0, r.err
    (d,) = [d for d in json.loads(r.out) if d["rank"]]
    assert d["spec_tokens"] == 1
    (fig,) = seen
    ax = fig.axes[0]
    (curve,) = [ln for ln in ax.get_lines() if ln.get_label() == "_#1 DeepSeek-V3"]
    (star,) = [ln for ln in ax.get_lines() if ln.get_label() == "_#1 DeepSeek-V3 operating point"]
    assert curve.get_linestyle() == "--"
    assert (star.get_xdata()[0], star.get_ydata()[0]) == pytest.approx((d["per_user_tok_s"], d["output_tok_s"]),
                                                                      rel=1e-12)
    assert star.get_xdata()[0] > curve.get_xdata()[0] * 1.2  # MTP: faster per user than the plan without it
    assert [t.get_text() for t in ax.texts] == ["#1 DeepSeek-V3 (MTP k=1; dashed: without)"]
    assert layout_problems(fig) == []


def test_replicas_are_drawn_as_the_deployment_the_ranking_scores() -> None:
    """Qwen3-0.6B at 64 users on the 8-GPU box: eight TP1 replicas of 8 users each (issue 52). The star is eight
    times what one TP1 predicts at 8 users, at that per-user speed, computed here from the cost model alone."""
    model = "Qwen/Qwen3-0.6B"
    hw = opt.hardware(HW, None)
    settings = opt.settings(engine="vllm", engine_version=None, max_model_len=None, kv_cache_dtype="auto",
                            gpu_memory_utilization=0.92, weight_dtype=None)
    terms, calibrated = terms_for(hw, "vllm", None)
    q = Query(objective="throughput", concurrency=64, input_len=1024, output_len=1024)
    ranking = rank([_resolved(model)], hw, settings, terms, q, calibrated)
    d = ranking.rows[0]
    assert d.deployment is not None and d.deployment.replicas == 8 and d.plan.label == "TP1"
    one = evaluate([make_case(_resolved(model).arch, Plan(tp=1), hw, settings)], terms, np.array([8.0]),
                   np.array([1024]), np.array([1024])).out
    fig = rank_figure(ranking, hw, settings)
    ax = fig.axes[0]
    (star,) = [ln for ln in ax.get_lines() if ln.get_label() == "_#1 Qwen3-0.6B operating point"]
    assert star.get_ydata()[0] == pytest.approx(8 * one["output_tok_s"][0, 0, 0], rel=1e-9)
    assert star.get_xdata()[0] == pytest.approx(one["per_user_tok_s"][0, 0, 0], rel=1e-9)
    assert "#1 Qwen3-0.6B\n8 x TP1" in [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert "replicas summed" in ax.get_ylabel()
