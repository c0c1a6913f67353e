"""The `rank --plot` figure: throughput vs per-user speed, decode-step breakdown, memory per GPU. It draws
what the ranking computed (its sweep and rows); it evaluates nothing.

matplotlib is imported inside the functions (the CLI must start without it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from advisor.cost.prediction import BREAKDOWN, PerGpu, Prediction
from advisor.cost.workload import Settings
from advisor.decide.ranked import Ranking
from advisor.hardware import HardwareProfile
from advisor.report.figfile import save

GiB = 2**30
# Memory stack of panel (c). "reserve" is what --gpu-memory-utilization keeps back: capacity - budget
# (vLLM `gpu_worker.py:determine_available_memory`).
MEMORY_PARTS = ("weights", "KV room", "activations", "overhead", "reserve")
MAX_BARS = 30  # panels (b) and (c) show the top rows only, so that a whole-catalog --all-plans stays legible


def memory_parts(per_gpu: PerGpu) -> dict[str, float]:
    """Bytes per GPU of each stacked part; they sum to the capacity."""
    return {"weights": per_gpu.weights_bytes, "KV room": per_gpu.kv_cache_bytes,
            "activations": per_gpu.activation_bytes, "overhead": per_gpu.overhead_bytes,
            "reserve": per_gpu.capacity_bytes - per_gpu.budget_bytes}


def rank_figure(ranking: Ranking, hw: HardwareProfile, settings: Settings) -> Any:
    """Three panels: (a) total vs per-user tok/s over the grid, (b) decode-step breakdown, (c) memory per GPU."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    rows, q = ranking.rows, ranking.query
    width = min(max(15.0, 5.0 + 0.6 * len(rows)), 30.0)
    models = len({d.model for d in rows})
    height = 5.5 if models <= 8 else 6.0 + 0.15 * models  # room for the legend below panel (a)
    fig = Figure(figsize=(width, height), layout="constrained")
    ax_a, ax_b, ax_c = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.4, 1, 1]})
    _throughput_panel(ax_a, ranking)
    top = list(rows[:MAX_BARS])
    more = f" (top {len(top)} of {len(rows)})" if len(rows) > len(top) else ""
    _breakdown_panel(ax_b, top, more)
    _memory_panel(ax_c, top, more)
    fig.suptitle(f"{hw.name} [{hw.id}]: {q.objective}, {q.input_len} in / {q.output_len} out, "
                 f"{settings.engine}")
    return fig


def _throughput_panel(ax: Any, ranking: Ranking) -> None:
    sweep = ranking.sweep
    assert sweep is not None
    colors: dict[str, str] = {}
    for name, i, best in ranking.best_and_others():
        colors.setdefault(name, f"C{len(colors) % 10}")
        x, y = sweep.series("per_user_tok_s", i), sweep.series("output_tok_s", i)
        label = f"{name} ({sweep.cases[i].plan.label()})"
        if best:
            ax.plot(x, y, "o-", color=colors[name], label=label, zorder=3)
        else:  # a leading underscore keeps it out of the legend
            ax.plot(x, y, "-", color=colors[name], alpha=0.25, linewidth=1, label=f"_{label}", zorder=2)
    grid = sweep.concurrency
    ax.set_xlabel("per-user speed (tok/s per user)")
    ax.set_ylabel("total output throughput (tok/s)")
    ax.set_title(f"(a) throughput vs per-user speed, {grid[0]:.0f}-{grid[-1]:.0f} users\n"
                 "(best plan bold, other valid plans faint)", fontsize="medium")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    if len(colors) <= 8:
        ax.legend(fontsize="small")
    else:
        ax.legend(fontsize="x-small", ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.12))


def _breakdown_panel(ax: Any, rows: Sequence[Prediction], more: str) -> None:
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for part in BREAKDOWN:
        h = np.array([(d.breakdown_ms or {})[part] for d in rows])
        ax.bar(x, h, bottom=bottom, label=part)
        bottom += h
    ax.set_xticks(x, [_short(d) for d in rows], rotation=60 if len(rows) > 6 else 20, ha="right", fontsize="small")
    ax.set_ylabel("decode step time (ms)")
    ax.set_title(f"(b) decode step at the ranked workload{more}", fontsize="medium")
    ax.legend(fontsize="small")


def _memory_panel(ax: Any, rows: Sequence[Prediction], more: str) -> None:
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    parts = [memory_parts(d.per_gpu) for d in rows if d.per_gpu is not None]
    for name in MEMORY_PARTS:
        h = np.array([p[name] for p in parts]) / GiB
        ax.bar(x, h, bottom=bottom, label=name)
        bottom += h
    capacity = max(p["weights"] + p["KV room"] + p["activations"] + p["overhead"] + p["reserve"]
                   for p in parts) / GiB
    ax.axhline(capacity, color="black", linestyle="--", linewidth=1, label=f"capacity {capacity:.1f} GiB")
    ax.set_xticks(x, [_short(d) for d in rows], rotation=60 if len(rows) > 6 else 20, ha="right", fontsize="small")
    ax.set_ylabel("memory per GPU (GiB)")
    ax.set_title(f"(c) memory per GPU{more}", fontsize="medium")
    ax.legend(fontsize="small", loc="lower right")


def _short(d: Prediction) -> str:
    return f"{d.model.rsplit('/', 1)[-1]} {d.plan.label}"


def write_rank_figure(ranking: Ranking, hw: HardwareProfile, settings: Settings, path: str) -> None:
    """The ranking's figure (`--plot`): quality against throughput for best-under-slo, else `rank_figure`."""
    if ranking.query.objective == "best-under-slo":
        from advisor.report.quality_plot import quality_figure

        save(quality_figure(ranking, hw), path)
    else:
        save(rank_figure(ranking, hw, settings), path)
