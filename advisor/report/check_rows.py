"""`advisor check`'s rows, made from the columns they were computed in (`calibrate/check.py`), a few thousand at
a time, so 200k rows need neither a list of all their records nor one big string: JSON records (one dict per
row, which the sink writes through `json.dumps`, non-finite floats already null) or table cells. Renders what
`check_files` computed; computes nothing itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from advisor.calibrate.check import METRICS, Computed
from advisor.calibrate.measurements import Rejected
from advisor.report.sink import Stream
from advisor.report.units import num

CHUNK = 4096
_TEMPLATE_KEYS = ("model", "hardware", "engine", "engine_version", "weight_dtype", "tp", "pp", "dp", "ep")
_RAW_KEYS = (*_TEMPLATE_KEYS, "concurrency", "input_len", "output_len", "source")
_NO_ERROR = dict.fromkeys(METRICS)


class CheckRows(Stream):
    """The rows of `check`: iterating gives each row's JSON record; `lines()` gives table cells."""

    def __init__(self, c: Computed, progress: Callable[[int], None] | None = None) -> None:
        super().__init__(len(c), self._records, progress)
        self.c = c
        t = c.prep.table
        self._input = [{k: getattr(tm, k) for k in _TEMPLATE_KEYS} for tm in t.templates]
        self._file = [tm.file for tm in t.templates]
        self._name = [Path(tm.file).name for tm in t.templates]
        self._trt = [tm.engine == "trtllm" for tm in t.templates]

    def _note(self, reason: int, inp: float, out: float, config: int) -> str | None:
        return self.c.note(reason, inp != inp, out != out, self._trt[config])

    def _chunks(self) -> Iterator[dict[str, list[Any]]]:
        """Each chunk's columns as Python lists (floats, nan where there is no value)."""
        p, t = self.c.prep, self.c.prep.table
        for lo in range(0, len(t), CHUNK):
            s = slice(lo, lo + CHUNK)
            cols = {k: getattr(t, k)[s].tolist() for k in ("config", "row", "concurrency", "input_len", "output_len",
                                                          *METRICS)}
            cols.update({f"pred_{m}": self.c.pred[m][s].tolist() for m in METRICS})
            cols.update({f"err_{m}": self.c.err[m][s].tolist() for m in METRICS})
            cols.update(reason=p.reason[s].tolist(), key=p.key[s].tolist(), source=t.source[s])
            yield cols

    def _records(self) -> Iterator[dict[str, Any]]:
        """Each row's record: input (conditions, file and row), measured, predicted (None when not predicted),
        error_pct, reason, calibrated; non-finite numbers as None. Per-row work is kept to building the dicts."""
        cal = [self.c.how.get(k) for k in self.c.prep.keys]  # by bucket index (predicted rows have one)
        notes: dict[tuple[int, bool, bool, int], str | None] = {}
        for col in self._chunks():
            v = {k: _finite(col[k]) for k in (*METRICS, *(f"{w}_{m}" for w in ("pred", "err") for m in METRICS))}
            ints = {k: [None if x != x else int(x) for x in col[k]] for k in ("concurrency", "input_len", "output_len")}
            for c, r, row, src, key, inp, out, conc, m1, m2, m3, p1, p2, p3, e1, e2, e3 in zip(
                    col["config"], col["reason"], col["row"], col["source"], col["key"], ints["input_len"],
                    ints["output_len"], ints["concurrency"], v["ttft_ms"], v["tpot_ms"], v["output_tok_s"],
                    v["pred_ttft_ms"], v["pred_tpot_ms"], v["pred_output_tok_s"], v["err_ttft_ms"], v["err_tpot_ms"],
                    v["err_output_tok_s"], strict=True):
                k = (r, inp is None, out is None, c)
                if k not in notes:
                    notes[k] = self.c.note(r, inp is None, out is None, self._trt[c])
                ok = r < 0
                yield {
                    "input": {**self._input[c], "concurrency": conc, "input_len": inp, "output_len": out,
                              "source": src or f"{self._name[c]} row {row}", "file": self._file[c], "row": row},
                    "measured": {"ttft_ms": m1, "tpot_ms": m2, "output_tok_s": m3},
                    "predicted": {"ttft_ms": p1, "tpot_ms": p2, "output_tok_s": p3} if ok else None,
                    "error_pct": {"ttft_ms": e1, "tpot_ms": e2, "output_tok_s": e3} if ok else _NO_ERROR,
                    "reason": notes[k], "calibrated": cal[key] if ok else None}
        for rej in self.c.rejected:
            yield rejected_record(rej)

    def lines(self) -> Iterator[list[str]]:
        """Each row's table cells: model, hw/engine, plan, C, in/out, TTFT, TPOT, tok/s (measured / predicted
        (error)), note."""
        t = self.c.prep.table
        label = [(tm.model, f"{tm.hardware}/{tm.engine or 'vllm'}", f"TP{tm.tp} PP{tm.pp} DP{tm.dp} EP{tm.ep}")
                 for tm in t.templates]
        for col in self._chunks():
            for j, c in enumerate(col["config"]):
                r, inp, out = col["reason"][j], col["input_len"][j], col["output_len"][j]
                ok = r < 0
                metrics = [_metric(col[m][j], col[f"pred_{m}"][j] if ok else None, col[f"err_{m}"][j] if ok else None)
                           for m in METRICS]
                yield [*label[c], str(int(col["concurrency"][j])), f"{_i(inp, '?')}/{_i(out, '?')}", *metrics,
                       self._note(r, inp, out, c) or ""]
        for rej in self.c.rejected:
            d = rejected_record(rej)
            i, m = d["input"], d["measured"]
            yield [str(i["model"]), f"{i['hardware']}/{i['engine'] or 'vllm'}",
                   f"TP{i['tp'] or '?'} PP{i['pp'] or 1} DP{i['dp'] or 1} EP{i['ep'] or 1}", str(i["concurrency"]),
                   f"{i['input_len'] or '?'}/{i['output_len'] or '?'}",
                   *(_metric(m[k] if m[k] is not None else float("nan"), None, None) for k in METRICS), d["reason"]]


def _finite(values: list[float]) -> list[float | None]:
    """The column with nan and +-inf as None (JSON null)."""
    bad = np.flatnonzero(~np.isfinite(np.asarray(values, float)))
    if not bad.size:
        return list(values)
    out: list[float | None] = list(values)
    for k in bad.tolist():
        out[k] = None
    return out


def _i(v: float, missing: str) -> str:
    return missing if v != v else str(int(v))


def _metric(meas: float, pred: float | None, err: float | None) -> str:
    if meas != meas and pred is None:
        return "-"
    pct = "" if err is None or err != err else f" ({err:+.0f}%)"
    return f"{'-' if meas != meas else num(meas)} / {'-' if pred is None else num(pred)}{pct}"


def _number(cell: str | None) -> float | None:
    """A rejected row's measured cell as a number when it is a finite one (the reason says what is wrong)."""
    try:
        v = float(cell or "")
    except ValueError:
        return None
    return v if v == v and abs(v) != float("inf") else None


def rejected_record(rej: Rejected) -> dict[str, Any]:
    """A row rejected when read: its raw cells, the finite measured numbers, the reason."""
    return {"input": {**{k: rej.raw.get(k) for k in _RAW_KEYS}, "file": rej.file, "row": rej.row},
            "measured": {m: _number(rej.raw.get(m)) for m in METRICS}, "predicted": None,
            "error_pct": dict.fromkeys(METRICS), "reason": f"rejected: {rej.reason}", "calibrated": None}
