"""Every figure of README.md and docs/ (docs/*.png): the `advisor` command that draws it and the script that
regenerates it with its page's block. tests/test_figures_canvas.py draws each of them again and checks that nothing
leaves the canvas and no labels collide (`advisor.report.figfile.layout_problems`).

    python -m scripts.doc_figures [NAME ...]   # redraw the figures (all by default) without touching the pages

Offline, on the bundled catalog and the default box (8x RTX PRO 6000 Server).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scripts.readme_block import REPO, advisor_cli

DOCS = REPO / "docs"
CASE = ("MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5", "nvidia/Kimi-K2.5-NVFP4")

# docs/NAME -> (the script that regenerates it with its block, the command that draws it but its output file, which
# is the last argument)
FIGURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ranking_catalog.png": ("capacity_examples", ("rank", "--objective", "goodput", "--max-tpot-ms", "50", "--plot")),
    "pareto_case_study.png": ("capacity_examples", ("pareto", *CASE, "--max-tpot-ms", "50", "-o")),
    "quality_catalog.png": ("quality_examples", ("rank", "--objective", "best-under-slo", "--max-tpot-ms", "50",
                                                 "--concurrency", "64", "--plot")),
}


def command(name: str, output: str | None = None) -> tuple[str, ...]:
    """The advisor arguments that draw docs/NAME into `output` (default: docs/NAME)."""
    return (*FIGURES[name][1], output or str(DOCS / name))


def draw(name: str) -> Path:
    """Draw docs/NAME with its command (offline, this checkout); return its path."""
    DOCS.mkdir(exist_ok=True)
    advisor_cli(*command(name))
    return DOCS / name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="NAME",
                    help=f"figures to redraw, of {', '.join(FIGURES)} (default: all)")
    args = ap.parse_args(argv)
    for name in args.names:
        if name not in FIGURES:
            ap.error(f"{name}: not a figure of docs/ (one of {', '.join(FIGURES)})")
    for name in args.names or FIGURES:
        print(draw(name).relative_to(REPO).as_posix())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
