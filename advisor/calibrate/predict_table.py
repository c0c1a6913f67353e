"""Predictions for every row of a `RowTable`, as arrays: what `check` runs on 200k rows.

Rows that share a configuration and lengths share one case (features or the reason it cannot be predicted,
`predict_rows._row_features`); rows that also share a concurrency share one prediction. Each (hardware, engine)
bucket is one vectorised `timing.serve` call over its distinct (case, concurrency) points, spread back to the
rows. `prepare` (calibrate, tests) is this, one record per row, and `predict_rows` those records predicted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.calibrate.measurements import Measurement
from advisor.calibrate.predict_rows import (
    DEFAULT_INPUT_LEN,
    DEFAULT_OUTPUT_LEN,
    METRIC_KEYS,
    Bucket,
    RowPrediction,
    _Cache,
    _row_features,
    assumptions,
    engine_label,
    run_bucket,
    with_predictions,
)
from advisor.calibrate.rowtable import Rows, RowTable
from advisor.cost.features import Features
from advisor.cost.serving import RunOptions
from advisor.cost.terms import Terms

NON_FINITE = "the cost model returned a non-finite value"


@dataclass(frozen=True)
class Prepared:
    """Per row: the lengths predicted with (the benchmark's mean, `mean_lengths`), the bucket key (index into
    `keys`) and the reason it cannot be predicted (index into `reasons`, -1 = predictable); the buckets of
    predictable rows."""

    table: RowTable
    input_len: np.ndarray
    output_len: np.ndarray
    combo: np.ndarray  # [N] the row's case (configuration and lengths): rows of one case share features
    key: np.ndarray
    keys: list[tuple[str, str]]
    reason: np.ndarray
    reasons: list[str]
    buckets: dict[tuple[str, str], Bucket]


def prepare_table(table: RowTable, rows: Sequence[Measurement] | None = None) -> Prepared:
    """Cases of every row (each distinct one built once) and the buckets; `rows`: the table's rows when the
    caller already holds them as Measurements (else bucket rows are made on demand)."""
    cache = _Cache()
    inp = np.where(np.isnan(table.input_len), DEFAULT_INPUT_LEN, table.input_len)
    out = np.where(np.isnan(table.output_len), DEFAULT_OUTPUT_LEN, table.output_len)
    tkeys = [(t.hardware, engine_label(t)) for t in table.templates]
    keys = sorted(set(tkeys))
    key = np.array([keys.index(k) for k in tkeys], dtype=np.int64)[table.config] if len(table) else \
        np.zeros(0, np.int64)
    code, parts = _codes(table.config, inp, out)
    first, inverse = np.unique(code, return_index=True, return_inverse=True)[1:]
    inverse = inverse.reshape(-1)
    combos = parts[first]
    reasons: dict[str, int] = {}
    feats: list[dict[str, object] | None] = []
    combo_reason = np.full(len(combos), -1, dtype=np.int64)
    for j, (c, i, o) in enumerate(combos):
        f = _row_features(cache, table.templates[int(c)], int(i), int(o))
        feats.append(None if isinstance(f, str) else f)
        if isinstance(f, str):
            combo_reason[j] = reasons.setdefault(f, len(reasons))
    reason = combo_reason[inverse] if len(table) else np.zeros(0, np.int64)
    ratio = np.array([np.nan if t.length_ratio is None else t.length_ratio for t in table.templates])[table.config] \
        if len(table) else np.zeros(0)
    mean_in, mean_out = mean_lengths(inp, ratio), mean_lengths(out, ratio)
    # a run's scheduling options: the Measurement fields named as serving.RunOptions's
    opts = np.array([[getattr(t, f) for f in RunOptions._fields] for t in table.templates],
                    dtype=float).reshape(-1, len(RunOptions._fields))[table.config]
    buckets = {}
    for k, name in enumerate(keys):
        idx = np.flatnonzero((key == k) & (reason < 0))
        if idx.size:
            buckets[name] = _bucket(table, rows, cache, name, idx, inverse, feats, mean_in, mean_out, ratio == 1,
                                    opts)
    return Prepared(table=table, input_len=mean_in, output_len=mean_out, combo=inverse, key=key, keys=keys,
                    reason=reason, reasons=list(reasons), buckets=buckets)


def mean_lengths(stated: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """Mean length a benchmark ran: uniform integers in [int(ratio x stated), stated] (InferenceX
    `utils/bench_serving/benchmark_serving.py: sample_random_requests`, `np.random.randint(lower, upper + 1)`);
    the stated length where the ratio is unknown (nan) or 1. The case keeps the stated (longest) lengths."""
    known = np.isfinite(ratio)
    lower = np.floor(np.where(known, ratio, 1.0) * stated)
    return np.where(known, (lower + stated) / 2, stated)


def _codes(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One int64 per row that is equal exactly when every column is (each column factorised, then mixed), and the
    columns stacked [N, k]: `np.unique` on one integer instead of on rows."""
    stacked = np.stack(columns, axis=1) if columns[0].size else np.zeros((0, len(columns)))
    code = np.zeros(stacked.shape[0], dtype=np.int64)
    for j in range(stacked.shape[1]):
        values, inv = np.unique(stacked[:, j], return_inverse=True)
        mixed = code * max(len(values), 1) + inv.reshape(-1)  # < N * N: no overflow, then re-numbered below N
        code = np.unique(mixed, return_inverse=True)[1].reshape(-1) if j else mixed
    return code, stacked


def _bucket(table: RowTable, rows: Sequence[Measurement] | None, cache: _Cache, name: tuple[str, str],
            idx: np.ndarray, inverse: np.ndarray, feats: list[dict[str, object] | None], inp: np.ndarray,
            out: np.ndarray, fixed: np.ndarray, opts: np.ndarray) -> Bucket:
    hw = cache.hw(name[0])
    assert not isinstance(hw, str)
    used, local = np.unique(inverse[idx], return_inverse=True)
    stacked = Features.stack([feats[int(u)] for u in used])  # type: ignore[misc]
    return Bucket(hw=hw, engine=name[1], index=idx.tolist(),
                  rows=[rows[int(i)] for i in idx] if rows is not None else Rows(table, idx),
                  features=stacked.take(local.reshape(-1)), concurrency=table.concurrency[idx],
                  input_len=inp[idx], output_len=out[idx], fixed_lengths=fixed[idx], options=opts[idx])


def predict(prep: Prepared, terms_by_key: Mapping[tuple[str, str], Terms],
            progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """Predicted ttft_ms, tpot_ms, output_tok_s per row (nan where not predicted); a row whose prediction is not
    finite and positive gets NON_FINITE as its reason (in `prep.reason`, updated in place)."""
    n = len(prep.table)
    pred = {m: np.full(n, np.nan) for m in METRIC_KEYS}
    done = 0
    for key, b in prep.buckets.items():
        idx = np.asarray(b.index)
        # rows with the same case and concurrency have the same prediction: evaluate each point once
        _, first, at = np.unique(_codes(prep.combo[idx], b.concurrency)[0], return_index=True, return_inverse=True)
        at = at.reshape(-1)
        small = Bucket(hw=b.hw, engine=b.engine, index=first.tolist(), rows=[], features=b.features.take(first),
                       concurrency=b.concurrency[first], input_len=b.input_len[first], output_len=b.output_len[first],
                       fixed_lengths=b.fixed_lengths[first], options=b.options[first])
        res = run_bucket(small, terms_by_key.get(key, Terms()))
        for m in METRIC_KEYS:
            pred[m][idx] = np.asarray(res[m])[at]
        done += idx.size
        if progress is not None:
            progress(done)
    ok = np.ones(n, bool)
    for m in METRIC_KEYS:
        ok &= np.isfinite(pred[m]) & (pred[m] > 0)
    bad = (prep.reason < 0) & ~ok
    if bad.any():
        if NON_FINITE not in prep.reasons:
            prep.reasons.append(NON_FINITE)
        prep.reason[bad] = prep.reasons.index(NON_FINITE)
        for m in METRIC_KEYS:
            pred[m][bad] = np.nan
    return pred


def prepare(rows: list[Measurement]) -> tuple[list[RowPrediction], dict[tuple[str, str], Bucket]]:
    """Per-row status (reason when not predictable) and the runnable rows bucketed by (hardware, engine):
    `prepare_table`, one record per row."""
    p = prepare_table(RowTable.of(rows), rows)
    preds = [RowPrediction(row=r, key=(r.hardware, engine_label(r)), input_len=int(p.input_len[i]),
                           output_len=int(p.output_len[i]),
                           notes=assumptions(r.input_len is None, r.output_len is None, r.engine == "trtllm"),
                           reason=p.reasons[p.reason[i]] if p.reason[i] >= 0 else None)
             for i, r in enumerate(rows)]
    return preds, p.buckets


def predict_rows(rows: list[Measurement],
                 terms_by_hw: Mapping[tuple[str, str], Terms] | None = None) -> list[RowPrediction]:
    """Predictions for measurement rows; `terms_by_hw` maps (hardware id, engine) -> Terms (default priors)."""
    preds, buckets = prepare(rows)
    return with_predictions(preds, buckets, terms_by_hw or {})
