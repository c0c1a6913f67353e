"""Held-out error under the splits a user's question implies: a model the fit never saw (leave one model
out) and a GPU it never saw (leave one hardware out); signed bias by concurrency band, MoE and dense apart.

A `Fitter` turns training buckets into terms per (hardware, engine) key; the split removes one group
(a model, or a hardware id) from every bucket, fits on the rest, and predicts the removed rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.calibrate.base import architecture_of, subset
from advisor.calibrate.measurements import Measurement
from advisor.calibrate.pooled import PooledCalibrator
from advisor.calibrate.predict_rows import METRIC_KEYS, Bucket, run_bucket
from advisor.calibrate.report import metric_summary
from advisor.cost.terms import Terms

Key = tuple[str, str]
TermsFor = Callable[[Key], Terms]
Fitter = Callable[[Mapping[Key, Bucket]], TermsFor]
Split = Literal["model", "hardware"]
# Concurrency bands the bias is reported in (users per serving instance).
BANDS: tuple[tuple[int, float, str], ...] = ((1, 4, "1-4"), (5, 16, "5-16"), (17, 64, "17-64"),
                                             (65, float("inf"), ">64"))


@dataclass(frozen=True)
class HeldOut:
    """One measured row predicted by terms fitted without its group."""

    row: Measurement
    key: Key
    moe: bool
    predicted: dict[str, float]

    def error_pct(self, metric: str) -> float | None:
        meas = getattr(self.row, metric)
        return None if meas is None else 100 * (self.predicted[metric] - meas) / meas


def group_of(row: Measurement, key: Key, split: Split) -> str:
    """The group a row is held out with: its architecture (`base.architecture_of`: models that differ only in
    name are one) or its GPU."""
    return architecture_of(row.model) if split == "model" else key[0]


def held_out(buckets: Mapping[Key, Bucket], split: Split, fitter: Fitter, workers: int = 1) -> list[HeldOut]:
    """Every row of `buckets` predicted by terms fitted on the buckets with its group removed. `workers` > 1 fits
    the groups in that many forked processes (each group's fit is independent; the rows come back in the same
    order, with the same values, as from one process)."""
    from research.forked import fork_map

    groups = sorted({group_of(r, k, split) for k, b in buckets.items() for r in b.rows})
    parts = fork_map(lambda g: _one_group(buckets, split, fitter, g), groups, workers)
    return [h for part in parts for h in part]


def _one_group(buckets: Mapping[Key, Bucket], split: Split, fitter: Fitter, g: str) -> list[HeldOut]:
    """Group `g`'s rows predicted by terms fitted on every other group's."""
    mask = {k: np.array([group_of(r, k, split) == g for r in b.rows]) for k, b in buckets.items()}
    train = {k: subset(b, ~mask[k]) for k, b in buckets.items() if (~mask[k]).any()}
    terms_for = fitter(train)
    out: list[HeldOut] = []
    for k, b in buckets.items():
        if not mask[k].any():
            continue
        test = subset(b, mask[k])
        pred = run_bucket(test, terms_for(k))
        moe = test.features.experts > 0
        for j, row in enumerate(test.rows):
            out.append(HeldOut(row=row, key=k, moe=bool(moe[j]),
                               predicted={m: float(pred[m][j]) for m in METRIC_KEYS}))
    return out


def band_of(concurrency: int) -> str:
    return next(label for lo, hi, label in BANDS if lo <= concurrency <= hi)


def summarize(rows: list[HeldOut]) -> dict[str, dict[str, object]]:
    """Per 'hardware/engine' and 'overall': |error| summaries of TPOT and TTFT, signed median TPOT bias per
    concurrency band for MoE and dense, and the rows with attention-DP (dp > 1)."""
    labels = sorted({f"{r.key[0]}/{r.key[1]}" for r in rows}) + ["overall"]
    out: dict[str, dict[str, object]] = {}
    for label in labels:
        mine = [r for r in rows if label == "overall" or f"{r.key[0]}/{r.key[1]}" == label]
        doc: dict[str, object] = {m: metric_summary(_errors(mine, m)) for m in METRIC_KEYS}
        doc["tpot_bias_by_band"] = {
            kind: {b: metric_summary(_errors([r for r in mine if r.moe == is_moe and
                                               band_of(r.row.concurrency) == b], "tpot_ms")).get("median_signed_pct")
                   for _, _, b in BANDS}
            for kind, is_moe in (("moe", True), ("dense", False))}
        dp = [r for r in mine if r.row.dp > 1]
        doc["dp_gt1"] = {m: metric_summary(_errors(dp, m)) for m in ("tpot_ms", "ttft_ms")}
        out[label] = doc
    return out


def _errors(rows: list[HeldOut], metric: str) -> list[float]:
    return [e for r in rows if (e := r.error_pct(metric)) is not None]


def pooled_fitter(prior: Terms | None = None) -> Fitter:
    """Terms fitted per engine across every GPU (`calibrate/pooled.py`); a GPU with no training rows gets its
    engine's pooled terms (what a GPU nobody measured gets)."""

    def fit(train: Mapping[Key, Bucket]) -> TermsFor:
        fits = {e: PooledCalibrator(prior).fit({k: b for k, b in train.items() if k[1] == e})
                for e in sorted({k[1] for k in train})}
        return lambda k: fits[k[1]].terms_for(k[0]) if k[1] in fits else (prior or Terms())

    return fit
