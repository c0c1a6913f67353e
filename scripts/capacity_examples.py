"""Regenerate docs/capacity.md's capacity-planning examples and the Pareto figure from the CLI itself.

    python -m scripts.capacity_examples [--update [FILE]]   # figures: docs/pareto_case_study.png, ranking_catalog.png

Each example runs `advisor ... --json` offline on the bundled catalog (default box: 8x RTX PRO 6000 Server)
and prints the numbers docs/capacity.md quotes. Prices are inputs of the example (a user's own rate), not data.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from scripts.doc_figures import DOCS, FIGURES, command, draw
from scripts.readme_block import advisor_cli, home, replace_block

MINIMAX, KIMI = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"
FIGURE, RANKING = DOCS / "pareto_case_study.png", DOCS / "ranking_catalog.png"


def advisor(*args: str) -> Any:
    return json.loads(advisor_cli(*args, "--json"))


def ranked(*args: str) -> list[dict[str, Any]]:
    return [d for d in advisor("rank", *args) if d["rank"]]


def slo_and_cost() -> list[str]:
    cmd = (MINIMAX, KIMI, "--max-tpot-ms", "50", "--gpu-hour-price", "2")
    lines = [f"`advisor rank {' '.join(cmd)}` (the price is the example's input):", "",
             "| model | plan | users within TPOT <= 50 ms (one replica) | binds | tok/s there | $/Mtok at $2/GPU-h | "
             "kWh/Mtok (at board power) | replicas on the node |", "|---|---|---:|---|---:|---:|---:|---|"]
    for d in ranked(*cmd):
        reps = f"{d['replicas']} ({d['node_output_tok_s']:,.0f} tok/s)" if d["replicas"] > 1 else "1"
        lines.append(f"| {d['model']} | {d['plan']['label']} | {d['max_users_at_slo']:,} | {d['binding_limit']} | "
                     f"{d['output_tok_s_at_slo']:,.0f} | {d['usd_per_mtok']:.2f} | {d['kwh_per_mtok']:.2f} | {reps} |")
    return lines


def boxes() -> list[str]:
    cmd = (KIMI, "--hw", "rtx-pro-6000-server", "--hw", "h200-sxm", "--hw", "b200-sxm", "--objective", "goodput",
           "--concurrency", "64", "--max-tpot-ms", "50", "--gpu-hour-price", "1.5", "--gpu-hour-price", "3",
           "--gpu-hour-price", "5")
    lines = [f"`advisor rank {' '.join(cmd)}` (prices per box, in --hw order, are the example's input):", "",
             "| # | box | plan | most users within TPOT <= 50 ms | best tok/s at <= 64 users within it | users there "
             "| $/Mtok there |", "|---:|---|---|---:|---:|---:|---:|"]
    for d in ranked(*cmd):
        usd = f"{d['usd_per_mtok']:.2f}" if d["usd_per_mtok"] is not None else "-"
        dep = d["deployment"]  # replicas of a plan smaller than the box serve the users together
        plan = d["plan"]["label"] if dep["replicas"] == 1 else f"{dep['replicas']} x {d['plan']['label']}"
        lines.append(f"| {d['rank']} | {d['hardware']} | {plan} | {d['max_users_at_slo']:,} | "
                     f"{dep['output_tok_s']:,.0f} | {dep['users']:,} | {usd} |")
    return lines


def speculative() -> list[str]:
    lines = ["MTP speculative decoding, DeepSeek-V3 on 8x H200 (`--speculative auto` keeps it per model only where it "
             "wins; acceptance 0.85 per drafted token, the lower end of the DeepSeek-V3 report's 85-90%):", "",
             "| objective | users | TPOT ms without | TPOT ms with MTP (k=1) | tokens per step | kept |",
             "|---|---:|---:|---:|---:|---|"]
    for objective, users in (("latency", 1), ("throughput", 256)):
        args = ("deepseek-ai/DeepSeek-V3", "--hw", "h200-sxm", "--objective", objective, "--concurrency", str(users))
        (off,) = ranked(*args)
        (auto,) = ranked(*args, "--speculative", "auto")
        (on,) = ranked(*args, "--speculative", "mtp")
        lines.append(f"| {objective} | {users} | {off['tpot_ms']:.1f} | {on['tpot_ms']:.1f} | "
                     f"{on['tokens_per_step']:.2f} | {'yes' if auto['spec_tokens'] else 'no'} |")
    return lines


def pareto() -> list[str]:
    FIGURE.parent.mkdir(exist_ok=True)
    pts = advisor(*command(FIGURE.name))  # the points (--json) and the figure
    lines = ["`advisor pareto MiniMaxAI/MiniMax-M2.5 moonshotai/Kimi-K2.5 nvidia/Kimi-K2.5-NVFP4 --max-tpot-ms 50 "
             "-o pareto.png` draws every valid plan at every concurrency; the operating points (most tok/s per "
             "GPU on the frontier within the target):", ""]
    for p in (p for p in pts if p["operating"]):
        lines.append(f"- {p['model']}: {p['plan']} at {p['concurrency']:,} users, {p['output_tok_s_per_gpu']:,.0f} "
                     f"tok/s per GPU, {p['per_user_tok_s']:.1f} tok/s per user")
    lines += ["", f"![Pareto frontier]({FIGURE.relative_to(home('capacity').parent).as_posix()})"]
    return lines


def ranking_figure() -> list[str]:
    """The figure of the README's whole-catalog ranking (`rank --plot`)."""
    draw(RANKING.name)
    args = " ".join(FIGURES[RANKING.name][1])
    return [f"`advisor {args} ranking.png` (whole catalog) draws the top plans by throughput within the target: each "
            "one's total against per-user tok/s over the users, its operating point starred and the TPOT limit "
            "dashed; its decode step by part and its memory per GPU:", "",
            f"![ranking figure]({RANKING.relative_to(home('capacity').parent).as_posix()})"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", type=Path, nargs="?", const=home("capacity"), metavar="FILE",
                    help="replace the capacity block of FILE (default: docs/capacity.md)")
    args = ap.parse_args(argv)
    text = "\n".join([*slo_and_cost(), "", *boxes(), "", *speculative(), "", *pareto(), "", *ranking_figure()])
    print(text)
    if args.update:
        replace_block(args.update, "capacity", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
