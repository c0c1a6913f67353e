"""The `advisor pareto` figure: per-user tok/s against total tok/s per GPU, every valid plan and concurrency,
each model's frontier drawn and its dominated points faint, the TPOT target drawn, operating points starred and
labelled on the figure; at catalog scale the top `TOP` models in colour, the other frontiers grey.
It draws what `decide/pareto.py` computed. matplotlib is imported inside the function (the CLI starts
without it)."""

from __future__ import annotations

from typing import Any

from advisor.decide.pareto import Frontier
from advisor.report.labels import Label, freeze_layout, place, plain_log_axis

TOP = 8  # models drawn in colour at catalog scale
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
# tab10 without its grey (C7), which the figures keep for "the other models"; then the next marker: (colour, marker)
# pairs never repeat below 9 x 12 = 108 models
PALETTE = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9")


def style(j: int) -> tuple[str, str]:
    """A distinct (colour, marker) for the j-th model."""
    return PALETTE[j % len(PALETTE)], MARKERS[(j // len(PALETTE)) % len(MARKERS)]


def pareto_figure(front: Frontier, title: str) -> Any:
    """Each model's frontier (line) and dominated points (faint), the operating points starred and labelled on the
    figure; at catalog scale the top `TOP` models by tok/s per GPU at their operating point in colour, the others'
    frontiers grey."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    shown, rest = _top(front)
    fig = Figure(figsize=(10.0, 6.0), layout="constrained")
    ax = fig.subplots()
    q = front.query
    for model in rest:
        edge = sorted((p for p in front.points if p.model == model and p.frontier), key=lambda p: p.per_user_tok_s)
        ax.plot([p.per_user_tok_s for p in edge], [p.output_tok_s_per_gpu for p in edge], "-", color="0.6",
                linewidth=0.8, alpha=0.6, zorder=1)
    labels, marks = [], []
    for j, model in enumerate(shown):
        color, marker = style(j)
        mine = [p for p in front.points if p.model == model]
        dominated = [p for p in mine if not p.frontier]
        ax.scatter([p.per_user_tok_s for p in dominated], [p.output_tok_s_per_gpu for p in dominated], s=12,
                   color=color, marker=marker, alpha=0.15, linewidths=0)
        edge = sorted((p for p in mine if p.frontier), key=lambda p: p.per_user_tok_s)
        ax.plot([p.per_user_tok_s for p in edge], [p.output_tok_s_per_gpu for p in edge], "-", color=color,
                marker=marker, markersize=5, label=model)
        marks += [(p.per_user_tok_s, p.output_tok_s_per_gpu) for p in edge]
        for p in mine:
            if p.operating:
                ax.scatter([p.per_user_tok_s], [p.output_tok_s_per_gpu], s=220, marker="*", color=color,
                           edgecolors="black", zorder=5)
                labels.append(Label(p.per_user_tok_s, p.output_tok_s_per_gpu, f"{p.plan}, {p.concurrency:,} users",
                                    color))
    if q.max_tpot_ms is not None:  # TPOT <= limit  <=>  per-user tok/s >= 1000 / limit
        ax.axvline(1000 / q.max_tpot_ms, color="black", linestyle="--", linewidth=1,
                   label=f"TPOT {q.max_tpot_ms:g} ms (right of it: within)")
    if rest:
        ax.plot([], [], "-", color="0.6", linewidth=0.8, label=f"{len(rest)} other models' frontiers")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axis(ax.xaxis)
    plain_log_axis(ax.yaxis)
    ax.set_xlabel("per-user speed (tok/s per user = 1000 / TPOT ms)")
    ax.set_ylabel("total output throughput per GPU (tok/s / GPU)")
    ttft = f", TTFT <= {q.max_ttft_ms:g} ms" if q.max_ttft_ms is not None else ""
    top = f"\ntop {len(shown)} of {len(shown) + len(rest)} models by tok/s per GPU at their operating point" if rest \
        else ""
    ax.set_title(f"{title}\nfrontier per model (line), dominated points faint, operating points starred{ttft}{top}",
                 fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    place(ax, labels, freeze_layout(fig), avoid=marks)
    return fig


def _top(front: Frontier) -> tuple[list[str], list[str]]:
    """The models drawn in colour (all when at most TOP; else the TOP with the most tok/s per GPU at their operating
    point, in that order) and the others."""
    models = front.models()
    if len(models) <= TOP:
        return models, []
    best = {p.model: p.output_tok_s_per_gpu for p in front.points if p.operating}
    order = sorted(models, key=lambda m: -best.get(m, -1.0))
    return order[:TOP], order[TOP:]


def write_figure(front: Frontier, hw_id: str, engine: str, path: str) -> None:
    """The figure, titled with the box and the workload, written as PNG or SVG (`plots.save`)."""
    from advisor.report.figfile import save

    q = front.query
    save(pareto_figure(front, f"{hw_id}: {q.input_len} in / {q.output_len} out, {engine}"), path)
