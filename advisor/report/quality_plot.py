"""The `rank --objective best-under-slo --plot` figure: quality against throughput (or $ per million output
tokens when a price is given) at the asked load and targets, one point per model at its best plan, the
quality/throughput frontier drawn, published 95% intervals as error bars, models with no score listed beside
the plot. It draws what the ranking computed. matplotlib is imported inside the function."""

from __future__ import annotations

from typing import Any

import numpy as np

from advisor.decide.pareto import pareto_mask
from advisor.decide.ranked import Ranking
from advisor.hardware import HardwareProfile
from advisor.report.pareto_plot import style


def quality_figure(ranking: Ranking, hw: HardwareProfile) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    q = ranking.query
    rows = list(dict((d.model, d) for d in reversed(ranking.rows)).values())[::-1]  # best plan per model
    known = [d for d in rows if d.quality is not None]
    unknown = [d.model for d in rows if d.quality is None] + [u.model for u in ranking.unranked]
    priced = all(d.usd_per_mtok is not None for d in known) and bool(known)
    xs = np.array([d.usd_per_mtok if priced else d.output_tok_s for d in known], float)
    ys = np.array([d.quality for d in known], float)
    fig = Figure(figsize=(10.0, 6.0), layout="constrained")
    ax = fig.subplots()
    for j, d in enumerate(known):
        color, marker = style(j)
        ax.errorbar(xs[j], ys[j], yerr=d.quality_ci95 or 0, fmt=marker, color=color, markersize=8, capsize=3,
                    alpha=1.0 if d.meets else 0.35,
                    label=f"{d.model} ({d.plan.label}){'' if d.meets else ', misses the targets'}")
    if known:  # frontier: more quality and more tok/s (or fewer $) is better
        ok = np.array([d.meets for d in known])
        front = pareto_mask(-xs if priced else xs, ys) & ok
        order = np.argsort(xs[front])
        ax.plot(xs[front][order], ys[front][order], "k--", linewidth=1, label="frontier (within the targets)")
    ax.set_xscale("log")
    ax.set_xlabel(f"$ per million output tokens at ${q.gpu_hour_price:g}/GPU-hour" if priced
                  else f"total output tok/s at {q.concurrency:,} users")
    ax.set_ylabel(f"quality: {q.quality_scale}")
    ax.set_title(f"{hw.id}: quality vs {'cost' if priced else 'throughput'} within {q.limits()} at "
                 f"{q.concurrency:,} users ({q.input_len} in / {q.output_len} out)\n"
                 "one point per model at its best plan; error bars: published 95% CI; faint: misses the targets",
                 fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    for n, model in enumerate(unknown):  # listed, never placed: no score on this scale
        ax.plot([], [], " ", label=("quality unknown on this scale: " if n == 0 else "   ") + model)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
