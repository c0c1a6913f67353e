"""The `rank --objective best-under-slo --plot` figure: quality against throughput (or $ per million output
tokens when a price is given) at the asked load and targets, one point per model at its best plan. The top `TOP`
models in rank order and the quality/throughput frontier are coloured and labelled on the figure; the other models
are grey dots; a model that misses the targets is hollow (as in the `rank --plot` figure); published 95% intervals
are error bars; the models with no score on the scale are counted in the key. It draws what the ranking computed.
matplotlib is imported inside the function."""

from __future__ import annotations

from typing import Any

import numpy as np

from advisor.decide.pareto import pareto_mask
from advisor.decide.ranked import RankedPlan, Ranking
from advisor.hardware import HardwareProfile
from advisor.report.labels import Label, freeze_layout, place, plain_log_axis
from advisor.report.pareto_plot import style

TOP = 8  # models labelled besides the frontier's


def quality_figure(ranking: Ranking, hw: HardwareProfile) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    q = ranking.query
    rows = list(dict((d.model, d) for d in reversed(ranking.rows)).values())[::-1]  # best plan per model
    known = [d for d in rows if d.quality is not None]
    unknown = [d.model for d in rows if d.quality is None] + [u.model for u in ranking.unranked]
    priced = all(d.usd_per_mtok is not None for d in known) and bool(known)
    # the whole deployment's tok/s (replicas of a plan smaller than the box summed), as the ranking scored it
    xs = np.array([d.usd_per_mtok if priced else d.deployment.output_tok_s if d.deployment else d.output_tok_s
                   for d in known], float)
    ys = np.array([d.quality for d in known], float)
    front = pareto_mask(-xs if priced else xs, ys) & np.array([d.meets for d in known], bool) if known \
        else np.zeros(0, bool)
    named = [j for j in range(len(known)) if j < TOP or front[j]]
    fig = Figure(figsize=(11.0, 6.5), layout="constrained")
    ax = fig.subplots()
    labels = []
    for j, d in enumerate(known):
        if j not in named:
            _point(ax, xs[j], ys[j], d, "0.6", "o", 4)
    for n, j in enumerate(named):
        color, marker = style(n)
        d = known[j]
        _point(ax, xs[j], ys[j], d, color, marker, 8)
        labels.append(Label(float(xs[j]), float(ys[j]), f"#{d.rank} {d.model.rsplit('/', 1)[-1]} ({d.plan.label})",
                            color))
    order = np.argsort(xs[front])
    ax.plot(xs[front][order], ys[front][order], "k--", linewidth=1, zorder=2)
    ax.set_xscale("log")
    _limits(ax, xs, ys)
    plain_log_axis(ax.xaxis)
    ax.set_xlabel(f"\\$ per million output tokens at \\${q.gpu_hour_price:g}/GPU-hour (left: cheaper)" if priced
                  else f"total output tok/s at {q.concurrency:,} users")
    ax.set_ylabel(f"quality: {q.quality_scale}")
    ax.set_title(f"{hw.id}: quality vs {'cost' if priced else 'throughput'} within {q.limits()} at "
                 f"{q.concurrency:,} users ({q.input_len} in / {q.output_len} out)\n"
                 f"one point per model at its best plan; labelled: top {min(TOP, len(known))} by rank and the "
                 "frontier", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    _key(ax, len(known) - len(named), len(unknown))
    renderer = freeze_layout(fig)
    place(ax, labels, renderer, avoid=list(zip(xs.tolist(), ys.tolist(), strict=True)))
    return fig


def _point(ax: Any, x: float, y: float, d: RankedPlan, color: str, marker: str, size: float) -> None:
    """One model: filled if it meets the targets, hollow if not; the published 95% CI as an error bar."""
    ax.errorbar(x, y, yerr=d.quality_ci95 or 0, fmt=marker, color=color, markersize=size, capsize=3 if size > 5 else 0,
                markerfacecolor=color if d.meets else "white", zorder=4 if size > 5 else 3)


def _limits(ax: Any, xs: np.ndarray, ys: np.ndarray) -> None:
    """Room around the points for their labels: a quarter decade on x, a tenth of the span on y."""
    if not xs.size:
        return
    ax.set_xlim(float(xs.min()) / 1.8, float(xs.max()) * 1.8)
    span = max(float(ys.max() - ys.min()), 1.0)
    ax.set_ylim(float(ys.min()) - 0.12 * span, float(ys.max()) + 0.12 * span)


def _key(ax: Any, grey: int, unknown: int) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="black", linestyle="--", linewidth=1, label="frontier (within the targets)"),
               Line2D([], [], marker="o", color="0.3", markerfacecolor="white", linestyle="none",
                      label="hollow: misses the targets"),
               Line2D([], [], marker="|", color="0.3", markersize=10, linestyle="none",
                      label="error bar: published 95% CI")]
    if grey:
        handles.append(Line2D([], [], marker="o", color="0.6", markersize=4, linestyle="none",
                              label=f"{grey} other models (--json lists them)"))
    if unknown:
        handles.append(Line2D([], [], linestyle="none", label=f"{unknown} models with no score on this scale"))
    ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
