"""The `advisor pareto` figure: per-user tok/s against total tok/s per GPU, every valid plan and concurrency,
each model's frontier drawn and its dominated points faint, the TPOT target drawn, operating points marked.
It draws what `decide/pareto.py` computed. matplotlib is imported inside the function (the CLI starts
without it)."""

from __future__ import annotations

from typing import Any

from advisor.decide.pareto import Frontier

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
PALETTE = 10  # tab10 colours, then the next marker: (colour, marker) pairs never repeat below 120 models


def style(j: int) -> tuple[str, str]:
    """A distinct (colour, marker) for the j-th model."""
    return f"C{j % PALETTE}", MARKERS[(j // PALETTE) % len(MARKERS)]


def pareto_figure(front: Frontier, title: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    models = front.models()
    fig = Figure(figsize=(10.0, 6.0 + 0.12 * max(len(models) - 8, 0)), layout="constrained")
    ax = fig.subplots()
    q = front.query
    for j, model in enumerate(models):
        color, marker = style(j)
        mine = [p for p in front.points if p.model == model]
        dominated = [p for p in mine if not p.frontier]
        ax.scatter([p.per_user_tok_s for p in dominated], [p.output_tok_s_per_gpu for p in dominated], s=12,
                   color=color, marker=marker, alpha=0.15, linewidths=0)
        edge = sorted((p for p in mine if p.frontier), key=lambda p: p.per_user_tok_s)
        ax.plot([p.per_user_tok_s for p in edge], [p.output_tok_s_per_gpu for p in edge], "-", color=color,
                marker=marker, markersize=5, label=model)
        for p in mine:
            if p.operating:
                ax.scatter([p.per_user_tok_s], [p.output_tok_s_per_gpu], s=220, marker="*", color=color,
                           edgecolors="black", zorder=5)
                ax.annotate(f"{p.plan}, {p.concurrency:,} users", (p.per_user_tok_s, p.output_tok_s_per_gpu),
                            textcoords="offset points", xytext=(8, 6), fontsize="small")
    if q.max_tpot_ms is not None:  # TPOT <= limit  <=>  per-user tok/s >= 1000 / limit
        ax.axvline(1000 / q.max_tpot_ms, color="black", linestyle="--", linewidth=1,
                   label=f"TPOT {q.max_tpot_ms:g} ms (right of it: within)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("per-user speed (tok/s per user = 1000 / TPOT ms)")
    ax.set_ylabel("total output throughput per GPU (tok/s / GPU)")
    ttft = f", TTFT <= {q.max_ttft_ms:g} ms" if q.max_ttft_ms is not None else ""
    ax.set_title(f"{title}\nfrontier per model (line), dominated points faint, operating points starred{ttft}",
                 fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small" if len(models) <= 10 else "x-small", ncol=1 if len(models) <= 10 else 2,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def write_figure(front: Frontier, hw_id: str, engine: str, path: str) -> None:
    """The figure, titled with the box and the workload, written as PNG or SVG (`plots.save`)."""
    from advisor.report.figfile import save

    q = front.query
    save(pareto_figure(front, f"{hw_id}: {q.input_len} in / {q.output_len} out, {engine}"), path)
