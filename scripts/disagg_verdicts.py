"""Disaggregate or not, measured against predicted, where the same model, GPU, engine, weight format and lengths were
measured both aggregated (`tests/data/bench/silicon_dev.csv`) and disaggregated (`silicon_disagg_dev.csv`).

Each run is a point (per-user speed 1000 / TPOT, output tok/s per GPU in the closed loop of its benchmark:
concurrency x output length / (TTFT + (output length - 1) x TPOT) / GPUs). A disaggregated run is a comparable case
when its group's aggregated runs reach both slower and faster per-user speeds than it (no extrapolation), measured
and predicted; the aggregated answer at its speed is the most tok/s per GPU of an aggregated run at least as fast per
user (`aggregated_at`). The verdict is "disaggregated" when the run beats it. Predicted verdicts use the predicted
TTFT and TPOT of the same runs (aggregated rows under the shipped calibration, which was fitted on them;
disaggregated rows under the same terms, never fitted on them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

Key = tuple[str, str, str, str, int, int]  # family, hardware, engine, weight format, input, output


@dataclass(frozen=True)
class Point:
    key: Key
    x_meas: float
    y_meas: float
    x_pred: float
    y_pred: float
    source: str


def closed_loop(concurrency: float, output_len: float, ttft_ms: float, tpot_ms: float, gpus: float
                ) -> tuple[float, float]:
    """(per-user tok/s, output tok/s per GPU) of a closed-loop run (module docstring)."""
    t = (ttft_ms + (output_len - 1) * tpot_ms) / 1e3
    return 1e3 / tpot_ms, concurrency * output_len / t / gpus


def name_family(model: str) -> str:
    """A model's name without its organisation and quantization suffix (nvidia/Qwen3-32B-NVFP4 -> qwen3-32b)."""
    name = model.split("/")[-1].lower()
    return re.sub(r"-(nvfp4|fp4|fp8|instruct)$", "", name)


def _arch(model: str) -> str:
    """`architecture_of`, or the model's own name when it cannot be read (a model only the Hub holds, offline)."""
    from advisor.calibrate.base import architecture_of
    from advisor.errors import AdvisorError

    try:
        return architecture_of(model)
    except AdvisorError:
        return model


def families(models: Iterable[str]) -> dict[str, str]:
    """Each model's family: models of one architecture (`calibrate/base.py: architecture_of`, DeepSeek-R1 and -V3)
    or of one name but for the quantization (`name_family`) are one; the family is named by its first member."""
    models = sorted(set(models))
    parent = {m: m for m in models}

    def root(m: str) -> str:
        while parent[m] != m:
            m = parent[m]
        return m

    arch = {m: _arch(m) for m in models}
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            if arch[a] == arch[b] or name_family(a) == name_family(b):
                parent[root(b)] = root(a)
    return {m: name_family(root(m)) for m in models}


def weight_format(model: str, weight_dtype: str | None) -> str:
    """The weights the run served: its cell, else the checkpoint's own (short name)."""
    from advisor.arch.formats import short_name
    from advisor.resolve import resolve

    return weight_dtype or short_name(resolve(model).arch.weight_dtype)


def aggregated_points(path: Path, fam: dict[str, str]) -> list[Point]:
    """Every predicted aggregated row of `path` with TTFT, TPOT and concurrency measured, under the shipped terms."""
    from advisor.calibrate.check import check_files

    c = check_files([str(path)], None).rows
    t, pred = c.prep.table, c.pred
    out = []
    for i in np.flatnonzero(c.prep.reason < 0):
        m = t.templates[int(t.config[i])]
        conc, o, ttft, tpot = t.concurrency[i], t.output_len[i], t.ttft_ms[i], t.tpot_ms[i]
        if not np.isfinite([conc, o, ttft, tpot]).all() or m.model not in fam:
            continue
        gpus = m.tp * m.pp * m.dp
        xm, ym = closed_loop(conc, o, ttft, tpot, gpus)
        xp, yp = closed_loop(conc, o, pred["ttft_ms"][i], pred["tpot_ms"][i], gpus)
        key = (fam[m.model], m.hardware, m.engine or "vllm", weight_format(m.model, m.weight_dtype),
               int(t.input_len[i]), int(o))
        out.append(Point(key, xm, ym, xp, yp, t.source[i] or f"{path.name} row {int(t.row[i])}"))
    return out


def aggregated_at(points: list[Point], x: float, measured: bool) -> float | None:
    """The most tok/s per GPU of an aggregated run at least `x` tok/s per user, None outside their speeds."""
    xs = np.array([p.x_meas if measured else p.x_pred for p in points])
    ys = np.array([p.y_meas if measured else p.y_pred for p in points])
    if not xs.size or x < xs.min() or x > xs.max():
        return None
    return float(ys[xs >= x].max())


@dataclass(frozen=True)
class Case:
    point: Point
    agg_meas: float
    agg_pred: float

    @property
    def measured(self) -> str:
        return "disaggregated" if self.point.y_meas > self.agg_meas else "aggregated"

    @property
    def predicted(self) -> str:
        return "disaggregated" if self.point.y_pred > self.agg_pred else "aggregated"


def cases(agg: list[Point], disagg: list[Point]) -> list[Case]:
    """The comparable disaggregated runs (module docstring)."""
    by: dict[Key, list[Point]] = {}
    for p in agg:
        by.setdefault(p.key, []).append(p)
    out = []
    for d in disagg:
        mine = by.get(d.key, [])
        am, ap = aggregated_at(mine, d.x_meas, True), aggregated_at(mine, d.x_pred, False)
        if am is not None and ap is not None:
            out.append(Case(d, am, ap))
    return out


def verdict_table(found: list[Case]) -> list[str]:
    """Markdown: the count, agreement, base rate, and per group."""
    if not found:
        return ["No disaggregated run has aggregated runs of its model, GPU, engine, weights and lengths around its "
                "per-user speed."]
    agree = sum(c.measured == c.predicted for c in found)
    common = max(("disaggregated", "aggregated"), key=lambda v: sum(c.measured == v for c in found))
    base = sum(c.measured == common for c in found)
    lines = [f"{len(found)} comparable disaggregated runs; the predicted verdict agrees with the measured one in "
             f"{agree} ({100 * agree / len(found):.0f}%); always answering the more common measured verdict "
             f"({common}) would be right in {base} ({100 * base / len(found):.0f}%).", "",
             "| model / GPU / engine / weights / in-out | runs | measured: disaggregated wins | predicted: "
             "disaggregated wins | agree |", "|---|---:|---:|---:|---:|"]
    groups: dict[Key, list[Case]] = {}
    for c in found:
        groups.setdefault(c.point.key, []).append(c)
    for k, cs in sorted(groups.items()):
        lines.append(f"| {k[0]} / {k[1]} / {k[2]} / {k[3]} / {k[4]}-{k[5]} | {len(cs)} | "
                     f"{sum(c.measured == 'disaggregated' for c in cs)} | "
                     f"{sum(c.predicted == 'disaggregated' for c in cs)} | "
                     f"{sum(c.measured == c.predicted for c in cs)} |")
    return lines
