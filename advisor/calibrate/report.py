"""Error summaries: n, median and p90 of |% error| per metric, per (hardware, engine) and overall."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, SerializationInfo, model_serializer


def metric_summary(signed: Sequence[float] | np.ndarray) -> dict[str, float]:
    """{n, median_abs_pct, p90_abs_pct, median_signed_pct} of signed % errors (empty -> n=0 only)."""
    if len(signed) == 0:
        return {"n": 0}
    a = np.asarray(signed, float)
    return {"n": int(a.size), "median_abs_pct": round(float(np.median(np.abs(a))), 2),
            "p90_abs_pct": round(float(np.percentile(np.abs(a), 90)), 2),
            "median_signed_pct": round(float(np.median(a)), 2)}


class MetricSummary(BaseModel):
    """`metric_summary` typed: with no rows only `n` (0) is set, and only `n` is written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int
    median_abs_pct: float | None = None
    p90_abs_pct: float | None = None
    median_signed_pct: float | None = None

    @model_serializer(mode="plain")
    def _set_only(self, info: SerializationInfo) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class GroupSummary(BaseModel):
    """One group's rows, predicted rows and per-metric summaries; `overall` also counts the rejected rows. JSON:
    rows, predicted, one object per metric, then rejected_rows (overall only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rows: int
    predicted: int
    metrics: dict[str, MetricSummary] = {}
    rejected_rows: int | None = None

    @model_serializer(mode="plain")
    def _flat(self, info: SerializationInfo) -> dict[str, Any]:
        doc: dict[str, Any] = {"rows": self.rows, "predicted": self.predicted}
        doc.update({m: s.model_dump(mode=info.mode) for m, s in self.metrics.items()})
        if self.rejected_rows is not None:
            doc["rejected_rows"] = self.rejected_rows
        return doc


Summary = dict[str, GroupSummary]  # 'hardware/engine' -> its group, sorted, then 'overall'


def summarize(labels: list[str], label: np.ndarray, predicted: np.ndarray,
              errors: dict[str, np.ndarray], rejected: int | None = None) -> Summary:
    """Per 'hardware/engine' (`labels[label[i]]` for row i) and 'overall': rows, predicted rows, and per-metric
    summaries of the signed % errors (`errors[m]`, nan where a row has no error for m); `rejected` rows (unread)
    are counted in 'overall' (which then exists even with no row read)."""
    out: Summary = {}
    groups = [(name, label == j) for j, name in enumerate(labels) if np.any(label == j)]
    if len(label):
        groups.append(("overall", np.ones(len(label), bool)))
    for name, mask in sorted(groups, key=lambda g: (g[0] == "overall", g[0])):
        out[name] = GroupSummary(rows=int(mask.sum()), predicted=int((mask & predicted).sum()),
                                 metrics={m: MetricSummary(**metric_summary(e[mask & np.isfinite(e)]))
                                          for m, e in errors.items()})
    if rejected is not None:
        overall = out.get("overall", GroupSummary(rows=0, predicted=0))
        out["overall"] = overall.model_copy(update={"rejected_rows": rejected})
    return out
