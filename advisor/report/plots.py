"""The `rank --plot` figure for the latency, throughput and goodput objectives: the top `TOP` ranked plans (in rank
order, each its own colour and marker, labelled on the figure) in three panels: (a) total against per-user tok/s
over the grid (a row that is r replicas of its plan: r times the plan's tok/s), the operating point starred, the
TPOT limit drawn and the points beyond the TTFT limit hollow;
(b) the decode step at the operating point by part; (c) memory per GPU by part. It draws what the ranking computed
(its sweep and rows); it evaluates nothing. One word per meaning: the decode step's fixed time is "fixed
latency", the memory outside weights/KV/activations is "runtime", in every panel and legend.

matplotlib is imported inside the functions (the CLI must start without it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from advisor.cost.prediction import BREAKDOWN, PerGpu
from advisor.cost.workload import Settings
from advisor.decide.query import Query
from advisor.decide.ranked import RankedPlan, Ranking
from advisor.hardware import HardwareProfile
from advisor.report.figfile import save
from advisor.report.labels import Label, freeze_layout, place, plain_log_axis
from advisor.report.pareto_plot import style

GiB = 2**30
TOP = 8  # plans drawn: the first TOP rows in rank order (`--json` has every row)
# Memory stack of panel (c). "reserve" is what --gpu-memory-utilization keeps back: capacity - budget
# (vLLM `gpu_worker.py:determine_available_memory`); "runtime" is `PerGpu.overhead_bytes`: non-torch memory + the
# CUDA-graph estimate (`cost/budget.py`).
MEMORY_PARTS = ("weights", "KV cache", "activations", "runtime", "reserve")
MEMORY_WORDS = {"weights": "weights", "KV cache": "KV cache", "activations": "activations",
                "runtime": "runtime (non-torch + CUDA graphs)", "reserve": "reserve (1 - gpu-memory-utilization)"}
# Panel (b): the decode step's parts (`cost/step.py: step_time`), `BREAKDOWN` key -> the word the figure uses.
STEP_WORDS = {"weights": "weights (reading)", "kv": "KV cache (reading)", "compute": "compute",
              "comm": "communication", "overhead": "fixed latency (launches, per layer and step)"}
# One colour per part, the same where (b) and (c) name the same thing; pale, so that they never read as a plan's.
PART_COLORS = {"weights": "#8da0cb", "kv": "#66c2a5", "KV cache": "#66c2a5", "compute": "#fc8d62",
               "comm": "#e78ac3", "overhead": "#b3b3b3", "activations": "#ffd92f", "runtime": "#e5c494",
               "reserve": "#dddddd"}


def memory_parts(per_gpu: PerGpu) -> dict[str, float]:
    """Bytes per GPU of each stacked part; they sum to the capacity."""
    return {"weights": per_gpu.weights_bytes, "KV cache": per_gpu.kv_cache_bytes,
            "activations": per_gpu.activation_bytes, "runtime": per_gpu.overhead_bytes,
            "reserve": per_gpu.capacity_bytes - per_gpu.budget_bytes}


def rank_figure(ranking: Ranking, hw: HardwareProfile, settings: Settings) -> Any:
    """Three panels over the top `TOP` rows: (a) total vs per-user tok/s, (b) decode step, (c) memory per GPU."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    rows, q = list(ranking.rows[:TOP]), ranking.query
    fig = Figure(figsize=(17.0, 7.0), layout="constrained")
    ax_a, ax_b, ax_c = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.5, 1, 0.8]})
    names = [f"#{d.rank} {_short(d)}" for d in rows]
    points, marks = _throughput_panel(ax_a, ranking, rows, names)
    _breakdown_panel(ax_b, rows, names)
    _memory_panel(ax_c, rows)
    shown = f"top {len(rows)} of {len(ranking.rows)} ranked" if len(ranking.rows) > len(rows) else \
        f"all {len(rows)} ranked"
    limits = f"; targets {q.limits()}" if q.limits() else ""
    fig.suptitle(f"{hw.name} [{hw.id}], {settings.engine}, {q.input_len} in / {q.output_len} out\n"
                 f"{shown} by {q.describe()}{limits}")
    renderer = freeze_layout(fig)
    place(ax_a, points, renderer, avoid=marks)
    return fig


def _throughput_panel(ax: Any, ranking: Ranking, rows: Sequence[RankedPlan], names: Sequence[str]
                      ) -> tuple[list[Label], list[tuple[float, float]]]:
    """Each row's deployment over the concurrency grid; its operating point starred (`_curve`). Returns the labels
    to place and the curves' points (for the labels to keep clear of)."""
    sweep, q = ranking.sweep, ranking.query
    assert sweep is not None
    labels, marks = [], []
    for j, (d, name) in enumerate(zip(rows, names, strict=True)):
        label, points = _curve(ax, ranking, d, name, j)
        labels.append(label)
        marks += points
    grid = sweep.concurrency
    ax.set_xscale("log")
    ax.set_yscale("log")
    drawn = [ln for ln in ax.get_lines() if ln.get_xdata().size]  # every curve and star (MTP: off its curve)
    xs = np.concatenate([ln.get_xdata() for ln in drawn]).astype(float)
    ys = np.concatenate([ln.get_ydata() for ln in drawn]).astype(float)
    lo, hi = float(np.nanmin(xs)), float(np.nanmax(xs))
    if q.max_tpot_ms is not None:  # TPOT <= limit  <=>  per-user tok/s >= 1000 / limit
        edge = 1000 / q.max_tpot_ms
        lo, hi = min(lo, edge), max(hi, edge)
        ax.axvline(edge, color="black", linestyle="--", linewidth=1, label=f"_TPOT {q.max_tpot_ms:g} ms")
        ax.axvspan(lo / 1.3, edge, color="0.5", alpha=0.12, linewidth=0, label=f"_beyond TPOT {q.max_tpot_ms:g} ms")
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.set_ylim(float(np.nanmin(ys)) / 2.5, float(np.nanmax(ys)) * 1.6)  # room for the labels below and above
    plain_log_axis(ax.xaxis)
    plain_log_axis(ax.yaxis)
    ax.set_xlabel("per-user speed (tok/s per user = 1000 / TPOT ms)")
    ax.set_ylabel("total output throughput (tok/s; replicas summed)")
    ax.set_title(f"(a) throughput vs per-user speed, {grid[0]:.0f}-{grid[-1]:.0f} users per replica; star: "
                 "operating point", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    _key(ax, q)
    return labels, marks


def _curve(ax: Any, ranking: Ranking, d: RankedPlan, name: str, j: int
           ) -> tuple[Label, list[tuple[float, float]]]:
    """Row j's deployment over the grid in its style (hollow beyond the TTFT limit), its operating point starred.
    A row that is r replicas of its plan (`RankedPlan.deployment`, `decide/replicas.py`) is drawn as the ranking
    scores it: the users spread evenly, r replicas at c users each give r x the plan's tok/s at c at the plan's
    per-user speed there, so the curve is the plan's over the grid times r, and the star the deployment's summed
    tok/s at the busiest replica's speed. A row ranked with MTP drafts (`--speculative auto`) is starred where MTP
    puts it while the ranking's sweep has the plan without them: its curve is dashed and its label says so. Returns
    the star's label and the curve's points."""
    sweep, q = ranking.sweep, ranking.query
    assert sweep is not None and d.per_user_tok_s is not None and d.output_tok_s is not None
    color, marker = style(j)
    i = _case(ranking, d)
    r = d.deployment.replicas if d.deployment is not None else 1
    without = bool(d.spec_tokens) and not sweep.cases[i].args.speculative
    x, y = sweep.series("per_user_tok_s", i), r * sweep.series("output_tok_s", i)
    ax.plot(x, y, "--" if without else "-", color=color, linewidth=1.5, label=f"_{name}", zorder=3)
    within = np.ones(x.size, bool) if q.max_ttft_ms is None else sweep.series("ttft_s", i) * 1e3 <= q.max_ttft_ms
    ax.plot(x[within], y[within], marker, color=color, markersize=4, linestyle="none", zorder=3,
            label=f"{name} ({_plan(d)})")
    ax.plot(x[~within], y[~within], marker, color=color, markerfacecolor="white", markersize=4,
            linestyle="none", zorder=3, label=f"_{name} beyond TTFT")
    star = d.deployment.output_tok_s if d.deployment is not None else d.output_tok_s
    ax.plot([d.per_user_tok_s], [star], "*", color=color, markersize=15, markeredgecolor="black",
            zorder=5, label=f"_{name} operating point")
    text = f"{name} (MTP k={d.spec_tokens}; dashed: without)" if without else name
    return Label(d.per_user_tok_s, star, text, color), list(zip(x.tolist(), y.tolist(), strict=True))


def _plan(d: RankedPlan) -> str:
    """The plan, as "r x PLAN" when the row is r replicas of it."""
    r = d.deployment.replicas if d.deployment is not None else 1
    return f"{r} x {d.plan.label}" if r > 1 else d.plan.label


def _key(ax: Any, q: Query) -> None:
    """What the marks mean (the plans are labelled on the curves): the targets and the star."""
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Artist] = [Line2D([], [], marker="*", color="0.3", markeredgecolor="black", markersize=12,
                                    linestyle="none", label="operating point (the ranked row)")]
    if q.max_tpot_ms is not None:
        handles += [Patch(facecolor="0.5", alpha=0.25, label=f"beyond TPOT {q.max_tpot_ms:g} ms (dashed: the limit)")]
    if q.max_ttft_ms is not None:
        handles += [Line2D([], [], marker="o", color="0.3", markerfacecolor="white", linestyle="none",
                           label=f"hollow: beyond TTFT {q.max_ttft_ms:g} ms")]
    ax.legend(handles=handles, fontsize="small", loc="best")


def _case(ranking: Ranking, d: RankedPlan) -> int:
    """The sweep case of a row: its model and plan."""
    assert ranking.sweep is not None
    return next(i for i, c in enumerate(ranking.sweep.cases)
                if c.arch.model == d.model and c.plan.label() == d.plan.label)


def _bars(ax: Any, names: Sequence[str], stacks: dict[str, np.ndarray], words: dict[str, str]) -> None:
    """Horizontal stacked bars, first row on top."""
    y = np.arange(len(names))
    left = np.zeros(len(names))
    for part, w in stacks.items():
        ax.barh(y, w, left=left, color=PART_COLORS[part], edgecolor="white", linewidth=0.5, label=words[part])
        left += w
    ax.set_yticks(y, names, fontsize="small")
    for j, t in enumerate(ax.get_yticklabels()):
        t.set_color(style(j)[0])
    ax.invert_yaxis()
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)


def _breakdown_panel(ax: Any, rows: Sequence[RankedPlan], names: Sequence[str]) -> None:
    stacks = {part: np.array([(d.breakdown_ms or {})[part] for d in rows]) for part in BREAKDOWN}
    _bars(ax, [f"{n}\n{_plan(d)}" for n, d in zip(names, rows, strict=True)], stacks, STEP_WORDS)
    ax.set_xlabel("decode step time (ms)")
    ax.set_title("(b) decode step at the operating point (busiest replica)", fontsize="medium")


def _memory_panel(ax: Any, rows: Sequence[RankedPlan]) -> None:
    parts = [memory_parts(d.per_gpu) for d in rows if d.per_gpu is not None]
    stacks = {name: np.array([p[name] for p in parts]) / GiB for name in MEMORY_PARTS}
    _bars(ax, [""] * len(parts), stacks, MEMORY_WORDS)
    ax.tick_params(axis="y", length=0)
    capacity = max(sum(p.values()) for p in parts) / GiB
    ax.axvline(capacity, color="black", linestyle="--", linewidth=1, label=f"capacity {capacity:.1f} GiB")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    ax.set_xlabel("memory per GPU (GiB)")
    ax.set_title("(c) memory per GPU", fontsize="medium")


def _short(d: RankedPlan) -> str:
    return d.model.rsplit("/", 1)[-1]


def write_rank_figure(ranking: Ranking, hw: HardwareProfile, settings: Settings, path: str) -> None:
    """The ranking's figure (`--plot`): quality against throughput for best-under-slo, else `rank_figure`."""
    if ranking.query.objective == "best-under-slo":
        from advisor.report.quality_plot import quality_figure

        save(quality_figure(ranking, hw), path)
    else:
        save(rank_figure(ranking, hw, settings), path)
