"""Every figure of the docs (docs/*.png) has a generator (`scripts/doc_figures.py: FIGURES`, regenerated with its
page's block) and, drawn again by its own command, keeps every artist on the canvas with no colliding labels
(`advisor.report.figfile.layout_problems`, measured on matplotlib's Agg renderer); the tracked file is that
figure's size. The check itself is tested on figures built to break it."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure

from advisor.report.figfile import layout_problems
from scripts.doc_figures import CASE, DOCS, FIGURES, command

REPO = Path(__file__).resolve().parents[1]


def test_every_docs_figure_has_a_generator() -> None:
    assert sorted(p.name for p in DOCS.glob("*.png")) == sorted(FIGURES)
    for name, (script, _) in FIGURES.items():
        # the script regenerates it (by name) and a page shows it
        assert f'"{name}"' in (REPO / "scripts" / f"{script}.py").read_text(encoding="utf-8"), (name, script)
        pages = [p for p in [REPO / "README.md", *DOCS.glob("*.md")] if f"]({name})" in p.read_text(encoding="utf-8")
                 or f"](docs/{name})" in p.read_text(encoding="utf-8")]
        assert pages, f"{name}: no page shows it"


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures `Figure.savefig` writes while the test runs."""
    seen: list[Any] = []
    original = Figure.savefig

    def record(self: Figure, *args: Any, **kwargs: Any) -> None:
        seen.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return seen


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_docs_figure_stays_on_its_canvas(name: str, advisor, drawn: list[Any], tmp_path: Path) -> None:
    out = tmp_path / name
    r = advisor(*command(name, str(out)))
    assert r.code == 0, r.err
    (fig,) = drawn
    assert layout_problems(fig) == []
    w, h = fig.get_size_inches() * fig.dpi
    assert _png_size(out) == (round(w), round(h))
    assert _png_size(DOCS / name) == _png_size(out), f"docs/{name} is stale: python -m scripts.doc_figures {name}"


def test_the_check_finds_what_leaves_the_canvas_and_what_collides() -> None:
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.set_xlim(0, 1)
    ax.set_xticks([0.5, 0.51], ["a long tick label", "another long one"])
    ax.text(0.2, 0.5, "here")
    ax.text(0.2, 0.5, "here too")
    ax.legend(handles=ax.plot([0, 1], [0, 1], label="a legend")[:1], loc="upper left", bbox_to_anchor=(1.5, 1))
    ax.set_title("a title much too long for a figure four inches wide, which runs off both sides of it")
    ax.set_xlabel("$ per million at $2")
    problems = layout_problems(fig)
    assert any("'$ per million at $2' reads as mathtext" in p for p in problems), problems
    assert any("tick labels 'a long tick label' and 'another long one' overlap" in p for p in problems), problems
    assert any("'here' and 'here too' overlap" in p for p in problems), problems
    assert any("legend leaves the canvas" in p for p in problems), problems
    assert any("text 'a title much too long" in p and "leaves the canvas" in p for p in problems), problems
    fine = Figure(figsize=(4, 3), layout="constrained")
    ax = fine.subplots()
    ax.plot([1, 2], [3, 4], label="x")
    ax.set_title("a title")
    ax.legend()
    assert layout_problems(fine) == []


def test_the_priced_quality_figure_reads(advisor, drawn: list[Any], tmp_path: Path) -> None:
    """Its axis names a price in dollars: escaped, it is not set as mathtext."""
    r = advisor("rank", *CASE, "--objective", "best-under-slo", "--max-tpot-ms", "50", "--concurrency", "16",
                "--gpu-hour-price", "2", "--plot", str(tmp_path / "q.png"))
    assert r.code == 0, r.err
    (fig,) = drawn
    assert fig.axes[0].get_xlabel().startswith("\\$ per million output tokens at \\$2/GPU-hour")
    assert layout_problems(fig) == []
