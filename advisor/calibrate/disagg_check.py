"""`advisor check` of disaggregated measurement files (`calibrate/disagg_columns.py`): every row predicted at its own
pools (`calibrate/disagg_predict.py: predict_disagg_rows`) under the terms of its (hardware, engine) bucket (the
--calibration file for the bucket it was fitted for, the shipped calibration for the others), its signed % errors
and their summary per hardware/engine and overall (`calibrate/report.py: summarize`, as for aggregated rows).

A row that misses one pool is not predicted and says why; when no row of the files is predicted and one misses a
pool, that is one line (AdvisorError, exit 2): the file does not describe a disaggregated deployment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from advisor.calibrate.disagg_predict import MISSING_SIDE, DisaggRow, predict_disagg_rows
from advisor.calibrate.report import Summary, summarize
from advisor.cost.terms import Terms
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile

METRICS = ("ttft_ms", "tpot_ms", "output_tok_s")  # the aggregated check's; disaggregated rows measure the first two
NOT_DISAGG = ("tp", "pp", "dp", "ep", "weight_dtype")  # condition flags that describe an aggregated row


@dataclass(frozen=True)
class DisaggCheck:
    """The rows with their predictions and reasons, the summary, where each bucket's terms came from, and with
    --calibration the summary of the same rows under the shipped terms."""

    rows: list[DisaggRow]
    summary: Summary
    calibrated: dict[str, str]
    summary_before: Summary | None = None


class _Terms:
    """Terms per (hardware, engine), memoised, with the `calibrated` line of each bucket used."""

    def __init__(self, calibration: str | None) -> None:
        self.calibration = calibration
        self.lines: dict[str, str] = {}
        self.cache: dict[tuple[str, str], Terms] = {}
        self.own = None
        if calibration is not None:
            from advisor.calibrate.store import read_calibration

            self.own = read_calibration(Path(calibration))

    def __call__(self, hw: HardwareProfile, engine: str) -> Terms:
        from advisor.calibrate.provenance import calibration_line
        from advisor.calibrate.store import terms_for

        key = (hw.id, engine)
        if key not in self.cache:
            mine = self.own is not None and (self.own.hardware, self.own.engine) == key
            self.cache[key], doc = terms_for(hw, engine, self.calibration if mine else None)
            self.lines[f"{hw.id}/{engine}"] = calibration_line({**doc, "hardware": doc.get("hardware", hw.id),
                                                                "engine": engine})
        return self.cache[key]


def errors(rows: list[DisaggRow]) -> dict[str, np.ndarray]:
    """Signed % error per metric and row (nan: none)."""
    return {m: np.array([np.nan if (e := r.error_pct(m)) is None else e for r in rows], float) for m in METRICS}


def summary_of(rows: list[DisaggRow]) -> Summary:
    """Per 'hardware/engine' and overall, as `advisor check` summarises aggregated rows."""
    labels = sorted({f"{r.hardware}/{r.engine}" for r in rows})
    label = np.array([labels.index(f"{r.hardware}/{r.engine}") for r in rows], int)
    return summarize(labels, label, np.array([r.predicted is not None for r in rows], bool), errors(rows))


def check_disagg_files(files: list[str], calibration: str | None, defaults: dict[str, Any] | None = None
                       ) -> DisaggCheck:
    """Read, predict and compare every row of `files` (module docstring); `defaults` fill empty model, hardware,
    engine and concurrency cells."""
    given = [k for k in NOT_DISAGG if (defaults or {}).get(k) is not None]
    if given:
        raise AdvisorError(f"--{given[0].replace('_', '-')}: a disaggregated row gives each pool's plan in its "
                           "prefill_*/decode_* cells")
    terms = _Terms(calibration)
    rows = [r for f in files for r in predict_disagg_rows(Path(f), terms, defaults)]
    if not any(r.predicted is not None for r in rows):
        lacking = next((r for r in rows if (r.reason or "").startswith(MISSING_SIDE)), None)
        if lacking is not None:
            raise AdvisorError(f"{lacking.file} row {lacking.row}: {lacking.reason}")
    own = terms.own
    if own is not None and (own.hardware, own.engine) not in terms.cache:
        raise AdvisorError(f"--calibration {calibration}: fitted for {own.hardware}/{own.engine}, and no predictable "
                           f"row of {', '.join(files)} is {own.hardware}/{own.engine}")
    before = None
    if calibration is not None:
        before = summary_of([r for f in files for r in predict_disagg_rows(Path(f), _Terms(None), defaults)])
    return DisaggCheck(rows=rows, summary=summary_of(rows), calibrated=dict(sorted(terms.lines.items())),
                       summary_before=before)


def fit_check(files: list[str], hw: HardwareProfile, engine: str, prior: Terms, fitted: Terms) -> dict[str, Any]:
    """`advisor calibrate` given disaggregated files beside aggregated ones: their rows of this (hardware, engine)
    predicted at their own pools under the terms the fit started from and under the fitted terms, their median
    errors before and after (a check of the fit on another serving mode: these rows are not fitted)."""
    from advisor.calibrate.report import metric_summary

    def mine(row: dict[str, str]) -> bool:
        return row.get("hardware") == hw.id and (row.get("engine") or "vllm") == engine

    out: dict[str, Any] = {"files": list(files)}
    for name, terms in (("before", prior), ("after", fitted)):
        def these(_hw: HardwareProfile, _engine: str, t: Terms = terms) -> Terms:
            return t

        rows = [r for f in files for r in predict_disagg_rows(Path(f), these, only=mine)]
        errs = errors(rows)
        out.update(rows=len(rows), predicted=sum(r.predicted is not None for r in rows))
        out[name] = {m: metric_summary(errs[m][np.isfinite(errs[m])]) for m in ("ttft_ms", "tpot_ms")}
    return out


def split_files(files: list[str]) -> tuple[list[str], list[str]]:
    """`advisor calibrate`'s files: the aggregated ones it fits on and the disaggregated ones it checks the fit
    with; one line when every file is disaggregated."""
    from advisor.calibrate.disagg_predict import is_disagg_file

    disagg = [f for f in files if is_disagg_file(f)]
    agg = [f for f in files if f not in disagg]
    if not agg:
        raise AdvisorError(f"{', '.join(files)}: disaggregated rows only: calibrate fits the engine's terms on "
                           "aggregated rows and predicts disaggregated ones with them (give aggregated rows too; "
                           "`advisor check FILE` predicts these)")
    return agg, disagg
