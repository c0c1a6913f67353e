"""Error summaries: n, median and p90 of |% error| per metric, per (hardware, engine) and overall."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from advisor.calibrate.predict_rows import METRIC_KEYS, RowPrediction, error_pct


def metric_summary(signed: Sequence[float]) -> dict[str, float]:
    """{n, median_abs_pct, p90_abs_pct, median_signed_pct} of signed % errors (empty -> n=0 only)."""
    if not signed:
        return {"n": 0}
    a = np.asarray(signed, float)
    return {"n": int(a.size), "median_abs_pct": round(float(np.median(np.abs(a))), 2),
            "p90_abs_pct": round(float(np.percentile(np.abs(a), 90)), 2),
            "median_signed_pct": round(float(np.median(a)), 2)}


def _group(preds: Iterable[RowPrediction]) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for p in preds:
        for label in (f"{p.key[0]}/{p.key[1]}", "overall"):
            slot = out.setdefault(label, {m: [] for m in METRIC_KEYS})
            for m, e in error_pct(p).items():
                if e is not None:
                    slot[m].append(e)
    return out


def summarize(preds: Sequence[RowPrediction]) -> dict[str, Any]:
    """Per 'hardware/engine' and 'overall': rows, predicted rows, and per-metric summaries."""
    out: dict[str, Any] = {}
    groups = _group(preds)
    for label, errs in sorted(groups.items(), key=lambda kv: (kv[0] == "overall", kv[0])):
        members = [p for p in preds if label == "overall" or f"{p.key[0]}/{p.key[1]}" == label]
        out[label] = {"rows": len(members), "predicted": sum(p.predicted is not None for p in members),
                      **{m: metric_summary(v) for m, v in errs.items()}}
    return out
