"""Regenerate docs/quality.md's quality examples and figure from the CLI itself.

    python -m scripts.quality_examples [--update [FILE]]   # figure: docs/quality_catalog.png

Offline, on the bundled catalog and the default box (8x RTX PRO 6000 Server), default quality scale.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from scripts.doc_figures import DOCS, FIGURES, draw
from scripts.readme_block import advisor_cli, home, replace_block

FIGURE = DOCS / "quality_catalog.png"
CASE = ("MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5", "nvidia/Kimi-K2.5-NVFP4")


def run(*args: str) -> tuple[Any, str]:
    """The rows (--json) and the printed text (its trade-off line is not in the JSON)."""
    return json.loads(advisor_cli(*args, "--json")), advisor_cli(*args)


def tradeoff_line(text: str) -> str:
    flat = " ".join(text.split())
    start = flat.index("best within")
    return flat[start:flat.index(" calibrated:", start)]


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| # | model | quality | plan | meets at the load | tok/s there |", "|---:|---|---:|---|---|---:|"]
    for d in rows:
        if not d["rank"]:
            continue
        qual = "unknown" if d["quality"] is None else f"{d['quality']:g}" + (
            f" ±{d['quality_ci95']:g}" if d["quality_ci95"] else "")
        dep = d["deployment"]  # replicas of a plan smaller than the box serve the users together
        plan = d["plan"]["label"] if dep["replicas"] == 1 else f"{dep['replicas']} x {d['plan']['label']}"
        out.append(f"| {d['rank']} | {d['model']} | {qual} | {plan} | {'yes' if d['meets'] else 'no'} "
                   f"| {dep['output_tok_s']:,.0f} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", type=Path, nargs="?", const=home("quality"), metavar="FILE",
                    help="replace the quality block of FILE (default: docs/quality.md)")
    args = ap.parse_args(argv)
    case_args = ("rank", *CASE, "--objective", "best-under-slo", "--max-tpot-ms", "50", "--concurrency", "16")
    case, case_text = run(*case_args)
    cat_args = FIGURES[FIGURE.name][1][:-1]  # the figure's command but its --plot
    catalog, cat_text = run(*cat_args)
    draw(FIGURE.name)
    lines = [f"`advisor {' '.join(case_args)}`:", "", *table(case), "", tradeoff_line(case_text), "",
             f"`advisor {' '.join(cat_args)} --plot quality.png` (whole catalog; top 8 of "
             f"{sum(1 for d in catalog if d['rank'])} ranked):", "", *table(catalog)[:10], "",
             tradeoff_line(cat_text), "",
             f"![quality vs throughput]({FIGURE.relative_to(home('quality').parent).as_posix()})"]
    text = "\n".join(lines)
    print(text)
    if args.update:
        replace_block(args.update, "quality", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
