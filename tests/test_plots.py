"""`rank --plot`: the figure's series and bars are the cost model's and the rows' numbers; files are valid."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import cli

from advisor import catalog
from advisor.calibrate.store import terms_for
from advisor.commands import options as opt
from advisor.cost.plan import Plan
from advisor.cost.prediction import BREAKDOWN
from advisor.cost.sweep import evaluate, make_case
from advisor.decide.choose import rank
from advisor.decide.query import Query
from advisor.report.plots import MEMORY_PARTS, GiB, rank_figure, save
from advisor.resolve import Resolved

MODELS = ("MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5")
HW = "rtx-pro-6000-server"


def _resolved(model: str) -> Resolved:
    entry = catalog.lookup(model)
    assert entry is not None, model
    return Resolved(ref=model, arch=entry.arch, source=f"catalog:{entry.id}")


@pytest.fixture(scope="module")
def ranked() -> dict[str, Any]:
    hw = opt.hardware(HW, None)
    settings = opt.settings(engine="vllm", engine_version=None, max_model_len=None, kv_cache_dtype="auto",
                            gpu_memory_utilization=0.92, weight_dtype=None)
    terms, calibrated = terms_for(hw, "vllm", None)
    q = Query(objective="throughput", concurrency=64, input_len=1024, output_len=1024)
    resolved = [_resolved(m) for m in MODELS]
    ranking = rank(resolved, hw, settings, terms, q, calibrated)
    assert not ranking.unranked and [d.model for d in ranking.rows] == list(MODELS)
    fig = rank_figure(ranking, hw, settings)
    rows = [d.model_dump(mode="json") for d in ranking.rows]
    return {"hw": hw, "settings": settings, "terms": terms, "q": q, "resolved": resolved, "rows": rows,
            "fig": fig}


def test_panel_a_one_line_per_model_with_cost_model_values(ranked: dict[str, Any]) -> None:
    ax = ranked["fig"].axes[0]
    named = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    assert len(named) == len(MODELS)
    assert len(ax.get_lines()) > len(MODELS)  # the other valid plans, faint and out of the legend
    hw, settings = ranked["hw"], ranked["settings"]
    grid = ranked["q"].grid()
    for d, line in zip(ranked["rows"], named, strict=True):
        assert d["model"] in line.get_label() and d["plan"]["label"] in line.get_label()
        p = d["plan"]
        arch = _resolved(d["model"]).arch
        case = make_case(arch, Plan(tp=p["tp"], pp=p["pp"], dp=p["dp"], ep=p["ep"]), hw, settings)
        res = evaluate([case], ranked["terms"], np.array(grid, float), np.array([1024]),
                       np.array([1024])).out
        np.testing.assert_allclose(line.get_ydata(), res["output_tok_s"][0, :, 0], rtol=1e-12)
        np.testing.assert_allclose(line.get_xdata(), res["per_user_tok_s"][0, :, 0], rtol=1e-12)
        # the row's reported point (64 users) lies on its curve
        k = grid.index(d["workload"]["concurrency"])
        assert line.get_ydata()[k] == pytest.approx(d["output_tok_s"], rel=1e-9)
    assert "tok/s" in ax.get_xlabel() and "tok/s" in ax.get_ylabel()


def _stacks(ax: Any) -> dict[str, list[float]]:
    return {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers}


def test_panel_b_stacks_are_the_rows_breakdown(ranked: dict[str, Any]) -> None:
    ax = ranked["fig"].axes[1]
    stacks = _stacks(ax)
    assert list(stacks) == list(BREAKDOWN)
    for part in BREAKDOWN:
        assert stacks[part] == pytest.approx([d["breakdown_ms"][part] for d in ranked["rows"]], rel=1e-12)
    tops = [sum(stacks[p][i] for p in BREAKDOWN) for i in range(len(MODELS))]
    assert tops == pytest.approx([sum(d["breakdown_ms"].values()) for d in ranked["rows"]])
    assert "ms" in ax.get_ylabel()


def test_panel_c_memory_stacks_to_capacity(ranked: dict[str, Any]) -> None:
    ax = ranked["fig"].axes[2]
    stacks = _stacks(ax)
    assert list(stacks) == list(MEMORY_PARTS)
    for i, d in enumerate(ranked["rows"]):
        pg = d["per_gpu"]
        assert stacks["weights"][i] * GiB == pytest.approx(pg["weights_bytes"])
        assert stacks["KV room"][i] * GiB == pytest.approx(pg["kv_cache_bytes"])
        assert stacks["activations"][i] * GiB == pytest.approx(pg["activation_bytes"])
        assert stacks["overhead"][i] * GiB == pytest.approx(pg["overhead_bytes"])
        total = sum(stacks[p][i] for p in MEMORY_PARTS) * GiB
        assert total == pytest.approx(pg["capacity_bytes"], rel=1e-6)
    capacity = [ln for ln in ax.get_lines() if ln.get_label().startswith("capacity")]
    assert len(capacity) == 1
    # the capacity vLLM budgets from is what CUDA reports (hwprofiles cuda_total_bytes), not nvidia-smi's total
    assert capacity[0].get_ydata()[0] * GiB == pytest.approx(ranked["hw"].gpu.cuda_total_bytes)
    assert "GiB" in ax.get_ylabel()


def test_title_names_hardware(ranked: dict[str, Any]) -> None:
    title = ranked["fig"]._suptitle.get_text()
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
