"""`advisor check`'s rows, written straight from the columns they were computed in: JSON text (one compact
object per line) or table lines, a few thousand rows at a time, so 200k rows need neither a list of dicts nor one
big string. Renders what `commands.check.check_doc` computed; computes nothing itself."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as js
from pathlib import Path
from typing import Any

import numpy as np

from advisor.calibrate.measurements import Rejected
from advisor.calibrate.predict_table import Prepared
from advisor.commands.output import RawJSON, Stream
from advisor.report.units import num

METRICS = ("ttft_ms", "tpot_ms", "output_tok_s")
CHUNK = 4096
_TEMPLATE_KEYS = ("model", "hardware", "engine", "engine_version", "weight_dtype", "tp", "pp", "dp", "ep")
_RAW_KEYS = (*_TEMPLATE_KEYS, "concurrency", "input_len", "output_len", "source")


@dataclass(frozen=True)
class Computed:
    """What check_doc computed: the prepared rows, predictions and signed % errors [N] (nan = none), the
    `calibrated` note per bucket key, each row's note, and the rejected rows."""

    prep: Prepared
    pred: dict[str, np.ndarray]
    err: dict[str, np.ndarray]
    how: dict[tuple[str, str], dict[str, Any]]
    note: Callable[[int, bool, bool, bool], str | None]  # (reason, no input_len, no output_len, trtllm)
    rejected: list[Rejected]


class CheckRows(Stream):
    """The rows of `check`: iterating gives each row's JSON (RawJSON); `lines()` gives table lines."""

    def __init__(self, c: Computed, progress: Callable[[int], None] | None = None) -> None:
        super().__init__(len(c.prep.table) + len(c.rejected), self._json, progress)
        self.c = c
        t = c.prep.table
        self._prefix = ["{" + ", ".join(f"{js(k)}: {json.dumps(getattr(tm, k))}" for k in _TEMPLATE_KEYS)
                        for tm in t.templates]
        self._file = [js(tm.file) for tm in t.templates]
        self._name = [Path(tm.file).name for tm in t.templates]
        self._trt = [tm.engine == "trtllm" for tm in t.templates]
        self._notes: dict[tuple[int, bool, bool, bool], str | None] = {}

    def _note(self, reason: int, inp: float, out: float, config: int) -> str | None:
        k = (reason, inp != inp, out != out, self._trt[config])
        if k not in self._notes:
            self._notes[k] = self.c.note(*k)
        return self._notes[k]

    def _chunks(self) -> Iterator[tuple[int, dict[str, list[Any]]]]:
        """Row offset and that chunk's columns as Python lists."""
        p, t = self.c.prep, self.c.prep.table
        for lo in range(0, len(t), CHUNK):
            s = slice(lo, lo + CHUNK)
            cols = {k: getattr(t, k)[s].tolist() for k in ("config", "row", "concurrency", "input_len", "output_len",
                                                          *METRICS)}
            cols.update({f"pred_{m}": self.c.pred[m][s].tolist() for m in METRICS})
            cols.update({f"err_{m}": self.c.err[m][s].tolist() for m in METRICS})
            cols.update(reason=p.reason[s].tolist(), key=p.key[s].tolist(), source=t.source[s])
            yield lo, cols

    def _json(self) -> Iterator[Any]:
        keys, how = self.c.prep.keys, {k: json.dumps(v) for k, v in self.c.how.items()}
        notes: dict[str | None, str] = {}
        for _, col in self._chunks():
            tok = {k: ["null" if v != v else repr(v) for v in col[k]]
                   for k in (*METRICS, *(f"{w}_{m}" for w in ("pred", "err") for m in METRICS))}
            m1, m2, m3 = tok["ttft_ms"], tok["tpot_ms"], tok["output_tok_s"]
            p1, p2, p3 = tok["pred_ttft_ms"], tok["pred_tpot_ms"], tok["pred_output_tok_s"]
            e1, e2, e3 = tok["err_ttft_ms"], tok["err_tpot_ms"], tok["err_output_tok_s"]
            for j in range(len(col["config"])):
                c, r, inp, out = col["config"][j], col["reason"][j], col["input_len"][j], col["output_len"][j]
                note = self._note(r, inp, out, c)
                if note not in notes:
                    notes[note] = json.dumps(note)
                src = col["source"][j] or f"{self._name[c]} row {col['row'][j]}"
                if r < 0:
                    pred = f'{{"ttft_ms": {p1[j]}, "tpot_ms": {p2[j]}, "output_tok_s": {p3[j]}}}'
                    err = f'"ttft_ms": {e1[j]}, "tpot_ms": {e2[j]}, "output_tok_s": {e3[j]}'
                    cal = how[keys[col["key"][j]]]
                else:
                    pred, err, cal = "null", '"ttft_ms": null, "tpot_ms": null, "output_tok_s": null', "null"
                yield RawJSON(
                    f'{{"input": {self._prefix[c]}, "concurrency": {int(col["concurrency"][j])}, '
                    f'"input_len": {_i(inp)}, "output_len": {_i(out)}, "source": {js(src)}, "file": {self._file[c]}, '
                    f'"row": {col["row"][j]}}}, "measured": {{"ttft_ms": {m1[j]}, "tpot_ms": {m2[j]}, '
                    f'"output_tok_s": {m3[j]}}}, "predicted": {pred}, "error_pct": {{{err}}}, '
                    f'"reason": {notes[note]}, "calibrated": {cal}}}')
        for rej in self.c.rejected:
            yield _rejected_doc(rej)

    def lines(self, widths: list[int]) -> Iterator[list[str]]:
        """Each row's table cells: model, hw/engine, plan, C, in/out, TTFT, TPOT, tok/s (measured / predicted
        (error)), note."""
        t = self.c.prep.table
        label = [(tm.model, f"{tm.hardware}/{tm.engine or 'vllm'}", f"TP{tm.tp} PP{tm.pp} DP{tm.dp} EP{tm.ep}")
                 for tm in t.templates]
        for _, col in self._chunks():
            for j in range(len(col["config"])):
                c, r, inp, out = col["config"][j], col["reason"][j], col["input_len"][j], col["output_len"][j]
                ok = r < 0
                metrics = [_metric(col[m][j], col[f"pred_{m}"][j] if ok else None, col[f"err_{m}"][j] if ok else None)
                           for m in METRICS]
                yield [*label[c], str(int(col["concurrency"][j])), f"{_i(inp, '?')}/{_i(out, '?')}", *metrics,
                       self._note(r, inp, out, c) or ""]
        for rej in self.c.rejected:
            d = json.loads(_rejected_doc(rej))
            i, m = d["input"], d["measured"]
            yield [str(i["model"]), f"{i['hardware']}/{i['engine'] or 'vllm'}",
                   f"TP{i['tp'] or '?'} PP{i['pp'] or 1} DP{i['dp'] or 1} EP{i['ep'] or 1}", str(i["concurrency"]),
                   f"{i['input_len'] or '?'}/{i['output_len'] or '?'}",
                   *(_metric(m[k] if m[k] is not None else float("nan"), None, None) for k in METRICS), d["reason"]]


def _i(v: float, missing: str = "null") -> str:
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


def _rejected_doc(rej: Rejected) -> RawJSON:
    return RawJSON(json.dumps({
        "input": {**{k: rej.raw.get(k) for k in _RAW_KEYS}, "file": rej.file, "row": rej.row},
        "measured": {m: _number(rej.raw.get(m)) for m in METRICS}, "predicted": None,
        "error_pct": {m: None for m in METRICS}, "reason": f"rejected: {rej.reason}", "calibrated": None}))
