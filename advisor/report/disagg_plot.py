"""The `pareto --mode disagg|auto` figure: per model its aggregated frontier (solid) and disaggregated frontier
(dashed), operating points starred, the TPOT target drawn. Draws what `decide/pareto.py` and
`decide/disagg_pareto.py` computed; matplotlib is imported inside (the CLI starts without it)."""

from __future__ import annotations

from typing import Any

from advisor.decide.pareto import Frontier
from advisor.report.pareto_plot import style

LINES = {"agg": ("-", "aggregated"), "disagg": ("--", "disaggregated")}


def disagg_figure(front: Frontier, title: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 6.0), layout="constrained")
    ax = fig.subplots()
    q = front.query
    for j, model in enumerate(front.models()):
        color, marker = style(j)
        for mode, (dash, name) in LINES.items():
            edge = sorted((p for p in front.points if p.model == model and p.mode == mode and p.frontier),
                          key=lambda p: p.per_user_tok_s)
            if not edge:
                continue
            ax.plot([p.per_user_tok_s for p in edge], [p.output_tok_s_per_gpu for p in edge], dash, color=color,
                    marker=marker, markersize=4, label=f"{model}, {name}")
            for p in edge:
                if p.operating:
                    ax.scatter([p.per_user_tok_s], [p.output_tok_s_per_gpu], s=220, marker="*", color=color,
                               edgecolors="black", zorder=5)
                    ax.annotate(f"{p.plan}, {p.concurrency:,} users", (p.per_user_tok_s, p.output_tok_s_per_gpu),
                                textcoords="offset points", xytext=(8, 6), fontsize="small")
    if q.max_tpot_ms is not None:  # TPOT <= limit  <=>  per-user tok/s >= 1000 / limit
        ax.axvline(1000 / q.max_tpot_ms, color="black", linestyle=":", linewidth=1,
                   label=f"TPOT {q.max_tpot_ms:g} ms (right of it: within)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("per-user speed (tok/s per user = 1000 / TPOT ms)")
    ax.set_ylabel("total output throughput per GPU (tok/s / GPU)")
    ttft = f", TTFT <= {q.max_ttft_ms:g} ms" if q.max_ttft_ms is not None else ""
    ax.set_title(f"{title}\naggregated frontier solid, disaggregated dashed, operating points starred{ttft}",
                 fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def write_disagg_figure(front: Frontier, hw_id: str, engine: str, path: str) -> None:
    """The figure, titled with the box and the workload, written as PNG or SVG (`figfile.save`)."""
    from advisor.report.figfile import save

    q = front.query
    save(disagg_figure(front, f"{hw_id}: {q.input_len} in / {q.output_len} out, {engine}"), path)
