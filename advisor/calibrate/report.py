"""Error summaries: n, median and p90 of |% error| per metric, per (hardware, engine) and overall."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def metric_summary(signed: Sequence[float] | np.ndarray) -> dict[str, float]:
    """{n, median_abs_pct, p90_abs_pct, median_signed_pct} of signed % errors (empty -> n=0 only)."""
    if len(signed) == 0:
        return {"n": 0}
    a = np.asarray(signed, float)
    return {"n": int(a.size), "median_abs_pct": round(float(np.median(np.abs(a))), 2),
            "p90_abs_pct": round(float(np.percentile(np.abs(a), 90)), 2),
            "median_signed_pct": round(float(np.median(a)), 2)}


def summarize(labels: list[str], label: np.ndarray, predicted: np.ndarray,
              errors: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per 'hardware/engine' (`labels[label[i]]` for row i) and 'overall': rows, predicted rows, and per-metric
    summaries of the signed % errors (`errors[m]`, nan where a row has no error for m)."""
    out: dict[str, Any] = {}
    groups = [(name, label == j) for j, name in enumerate(labels) if np.any(label == j)]
    if len(label):
        groups.append(("overall", np.ones(len(label), bool)))
    for name, mask in sorted(groups, key=lambda g: (g[0] == "overall", g[0])):
        out[name] = {"rows": int(mask.sum()), "predicted": int((mask & predicted).sum()),
                     **{m: metric_summary(e[mask & np.isfinite(e)]) for m, e in errors.items()}}
    return out
