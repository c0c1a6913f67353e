"""`advisor check`: predict every measured row and compute its signed % errors and their summary.

Rows are read, predicted and kept as columns (`rowtable`, `predict_table`), so 200k rows take seconds, not
minutes; `report/check_rows.py` makes each row's record from these columns while it is written. The signed error
of a metric is 100 x (predicted - measured) / measured; a row that is not predicted has none (nan here, null in
JSON)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from advisor.calibrate.measurements import Rejected
from advisor.calibrate.predict_table import Prepared
from advisor.calibrate.report import Summary
from advisor.errors import AdvisorError

METRICS = ("ttft_ms", "tpot_ms", "output_tok_s")
Update = Callable[[str, int, int | None], None]  # progress: (stage, done, total or None)


@dataclass(frozen=True)
class Computed:
    """The prepared rows, their predictions and signed % errors [N] per metric (nan = none), the `calibrated`
    note per (hardware, engine) bucket, and the rows rejected when read."""

    prep: Prepared
    pred: dict[str, np.ndarray]
    err: dict[str, np.ndarray]
    how: dict[tuple[str, str], dict[str, Any]]
    rejected: list[Rejected]
    _notes: dict[tuple[int, bool, bool, bool], str | None] = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return len(self.prep.table) + len(self.rejected)

    def note(self, reason: int, no_input: bool, no_output: bool, trtllm: bool) -> str | None:
        """A row's note: why it is not predicted (reason index, -1: predicted) and what its prediction assumes
        (`predict_rows.assumptions`); made once per distinct combination."""
        k = (reason, no_input, no_output, trtllm)
        if k not in self._notes:
            from advisor.calibrate.predict_rows import assumptions

            parts = [self.prep.reasons[reason]] if reason >= 0 else []
            self._notes[k] = "; ".join([*parts, *assumptions(no_input, no_output, trtllm)]) or None
        return self._notes[k]


@dataclass(frozen=True)
class CheckResult:
    """What `check` found: the rows (as columns), the summary per hardware/engine and overall, where each
    bucket's terms came from, and with --calibration the summary of the same rows under the shipped terms."""

    rows: Computed
    summary: Summary
    calibrated: dict[str, str]  # 'hardware/engine' -> `provenance.calibration_line`
    summary_before: Summary | None = None
    unpredicted: dict[str, int] = field(default_factory=dict)  # why a row has no prediction -> rows, most first


def unpredicted(prep: Prepared, rejected: list[Rejected]) -> dict[str, int]:
    """Why rows have no prediction, with how many: each reason a row could not be predicted, and each reason a
    row was rejected when read ("rejected: ..."), most rows first."""
    counts: dict[str, int] = {}
    idx = prep.reason[prep.reason >= 0]
    for k, n in enumerate(np.bincount(idx, minlength=len(prep.reasons)) if idx.size else []):
        if n:
            counts[prep.reasons[k]] = int(n)
    for r in rejected:
        key = f"rejected: {r.reason}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def nothing_checked(files: list[str], rows: int, why: dict[str, int]) -> str:
    """The one line when no row could be predicted: no rows at all, or how many and the commonest reasons."""
    from advisor.text import plural

    where = ", ".join(files)
    if not rows:
        return f"{where}: no measurement rows (a header only, or nothing): nothing to check"
    top = "; ".join(f"{n:,} x {reason}" for reason, n in list(why.items())[:3])
    more = f"; {len(why) - 3} more reasons (--json has each row's)" if len(why) > 3 else ""
    none = "its only row cannot be predicted" if rows == 1 else f"none of its {plural(rows, 'row')} can be predicted"
    return f"{where}: nothing could be checked: {none} ({top}{more})"


def known_conditions(defaults: dict[str, Any] | None) -> None:
    """The condition flags name what exists: --hw a hardware profile, --model a model some source holds (else
    every row they fill would fail alike, a typo reported per row); one line naming the flag."""
    given = defaults or {}
    try:
        if given.get("hardware") is not None:
            from advisor.hardware import load_profile

            load_profile(str(given["hardware"]))
    except AdvisorError as err:
        raise AdvisorError(f"--hw: {err}") from None
    try:
        if given.get("model") is not None:
            from advisor.resolve import resolve

            resolve(str(given["model"]))
    except AdvisorError as err:
        raise AdvisorError(f"--model: {err}") from None


def _terms(prep: Prepared, calibration: str | None, files: list[str]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """Terms and the `calibrated` note per (hardware, engine) bucket: the --calibration file for the bucket it was
    fitted for, the shipped pooled terms (own or engine-wide) for the others."""
    from advisor.calibrate.provenance import calibration_line
    from advisor.calibrate.store import read_calibration, terms_for

    own = read_calibration(Path(calibration)) if calibration is not None else None  # checked even if unused
    if own is not None and prep.buckets and (own.hardware, own.engine) not in prep.buckets:
        raise AdvisorError(f"--calibration {calibration}: fitted for {own.hardware}/{own.engine}, and no predictable "
                           f"row of {', '.join(files)} is {own.hardware}/{own.engine}")
    terms, how = {}, {}
    for key, b in prep.buckets.items():
        mine = own is not None and (own.hardware, own.engine) == key
        terms[key], doc = terms_for(b.hw, key[1], calibration if mine else None)
        how[key] = {"how": doc["how"], "rows": doc.get("rows", 0), "bounds_hit": doc.get("bounds_hit", []),
                    "line": calibration_line({**doc, "hardware": doc.get("hardware", key[0]), "engine": key[1]})}
    return terms, how


def _errors(pred: dict[str, np.ndarray], measured: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # inf where a measurement is ~0: null in JSON
        return {m: 100 * (pred[m] - measured[m]) / measured[m] for m in METRICS}


def check_files(files: list[str], calibration: str | None, defaults: dict[str, Any] | None = None,
                update: Update | None = None) -> CheckResult:
    """Read, predict and compare every row of `files` (`defaults` fill what a file does not hold); `update` hears
    the progress."""
    from advisor.calibrate.predict_table import predict, prepare_table
    from advisor.calibrate.report import summarize
    from advisor.calibrate.rowtable import RowTable, read_table

    known_conditions(defaults)
    say: Update = update or (lambda stage, done, total: None)
    tables, rejected = [], []
    for f in files:
        tab, rej = read_table(f, defaults=defaults, progress=lambda n: say("reading rows", n, None))
        tables.append(tab)
        rejected += rej
    table = RowTable.concat(tables)
    prep = prepare_table(table)
    why = unpredicted(prep, rejected)
    if not np.any(prep.reason < 0):
        raise AdvisorError(nothing_checked(files, len(table) + len(rejected), why))
    terms, how = _terms(prep, calibration, files)
    pred = predict(prep, terms, lambda n: say("predicting", n, len(table)))
    measured = {m: getattr(table, m) for m in METRICS}
    err = _errors(pred, measured)
    labels = [f"{h}/{e}" for h, e in prep.keys]
    before = None
    if calibration is not None:  # the same rows under the shipped terms: what the user's own fit changed
        shipped, _ = _terms(prep, None, files)
        before = summarize(labels, prep.key, prep.reason < 0, _errors(predict(prep, shipped), measured))
    return CheckResult(rows=Computed(prep=prep, pred=pred, err=err, how=how, rejected=rejected),
                       summary=summarize(labels, prep.key, prep.reason < 0, err, rejected=len(rejected)),
                       calibrated={f"{k[0]}/{k[1]}": v["line"] for k, v in how.items()}, summary_before=before,
                       unpredicted=why)
