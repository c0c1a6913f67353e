"""Measured rows as columns, read fast: what `advisor check` reads 200k rows with.

A row's configuration (model, hardware, engine, version, weight dtype, plan) repeats over many rows: it is
validated once, through the one `Measurement` model (`measurements.build_row`), and shared. A row's numbers
(concurrency, lengths, TTFT, TPOT, tok/s) are read by a strict fast path that accepts only plain decimal
spellings the model accepts too; anything else (and every row whose configuration is rejected) goes through
`build_row` itself, so a row is accepted or rejected, with the same reason, exactly as `build_row` would.
`read_measurements` gives the same rows as `Measurement` records.
"""

from __future__ import annotations

import csv
import io
import math
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from operator import itemgetter
from pathlib import Path
from typing import Any, overload

import numpy as np

from advisor.calibrate.columns import COLUMNS, CONFIG, METRICS, REQUIRED_COLUMNS
from advisor.calibrate.measurements import (
    Measurement,
    MeasurementSet,
    Rejected,
    benchmark_concurrency,
    build_row,
    read_text,
)
from advisor.errors import AdvisorError

_AT = {c: i for i, c in enumerate(COLUMNS)}
_PLAIN = re.compile(r"[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_PLACEHOLDER = {"concurrency": "1", "ttft_ms": "1", "input_len": "", "output_len": "", "tpot_ms": "",
                "output_tok_s": ""}
JSON_LACKS = "this file lacks hardware and plan (a vLLM bench JSON records neither): pass --hw and --tp"


@dataclass
class RowTable:
    """Valid rows: `templates[config[i]]` is row i's validated configuration (its numbers are placeholders);
    the numbers are arrays (nan = not stated / not measured)."""

    templates: list[Measurement] = field(default_factory=list)
    config: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    concurrency: np.ndarray = field(default_factory=lambda: np.zeros(0))
    input_len: np.ndarray = field(default_factory=lambda: np.zeros(0))
    output_len: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ttft_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tpot_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    output_tok_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    source: list[str] = field(default_factory=list)  # "" = the default `FILE row N`

    def __len__(self) -> int:
        return int(self.config.size)

    def measurement(self, i: int) -> Measurement:
        """Row i as the validated `Measurement` it is."""
        t = self.templates[int(self.config[i])]
        nums = {k: _num(getattr(self, k)[i], k in ("concurrency", "input_len", "output_len"))
                for k in ("concurrency", "input_len", "output_len", *METRICS)}
        row = int(self.row[i])
        source = self.source[i] or f"{Path(t.file).name} row {row}"
        return t.model_copy(update={**nums, "row": row, "source": source})

    def measurements(self) -> list[Measurement]:
        return [self.measurement(i) for i in range(len(self))]

    @staticmethod
    def of(rows: Sequence[Measurement]) -> RowTable:
        """A table of Measurements already validated (each its own template)."""
        def col(name: str) -> np.ndarray:
            return np.array([math.nan if getattr(r, name) is None else getattr(r, name) for r in rows], dtype=float)

        return RowTable(templates=list(rows), config=np.arange(len(rows), dtype=np.int64),
                        row=np.array([r.row for r in rows], dtype=np.int64), source=[r.source for r in rows],
                        **{k: col(k) for k in ("concurrency", "input_len", "output_len", *METRICS)})

    @staticmethod
    def concat(tables: Sequence[RowTable]) -> RowTable:
        """One table of several (files read one by one), rows in order."""
        if len(tables) == 1:
            return tables[0]
        out = RowTable(templates=[t for tab in tables for t in tab.templates],
                       source=[s for tab in tables for s in tab.source])
        offsets = np.cumsum([0] + [len(t.templates) for t in tables[:-1]])
        out.config = np.concatenate([t.config + off for t, off in zip(tables, offsets, strict=True)])
        for name in ("concurrency", "input_len", "output_len", *METRICS, "row"):
            setattr(out, name, np.concatenate([getattr(t, name) for t in tables]))
        return out


def _num(v: float, integer: bool) -> float | int | None:
    if math.isnan(v):
        return None
    return int(v) if integer else float(v)


class Rows(Sequence[Measurement]):
    """Rows of a table at `index`, as `Measurement`s made when asked for (a bucket's rows in `calibrate`)."""

    def __init__(self, table: RowTable, positions: np.ndarray) -> None:
        self.table, self.positions = table, positions

    def __len__(self) -> int:
        return int(self.positions.size)

    @overload
    def __getitem__(self, i: int) -> Measurement: ...

    @overload
    def __getitem__(self, i: slice) -> Rows: ...

    def __getitem__(self, i: int | slice) -> Measurement | Rows:
        if isinstance(i, slice):
            return Rows(self.table, self.positions[i])
        return self.table.measurement(int(self.positions[i]))

    def __iter__(self) -> Iterator[Measurement]:
        return (self.table.measurement(int(j)) for j in self.positions)


class _Builder:
    """Accumulates rows: configuration templates validated once, numbers in typed arrays."""

    def __init__(self, file: str, defaults: Mapping[str, object], known: dict[str, Any]) -> None:
        self.file, self.known = file, known
        self.defaults = [(_AT[k], str(v)) for k, v in defaults.items() if v is not None]
        self.templates: list[Measurement] = []
        self.by_cells: dict[tuple[str, ...], int | None] = {}
        self.nums: list[tuple[float, ...]] = []  # concurrency, input_len, output_len, *METRICS per row
        self.config, self.rows = array("q"), array("q")
        self.source: list[str] = []
        self.rejected: list[Rejected] = []

    def add(self, number: int, cells: list[str], raw: Callable[[], dict[str, str]], is_json: bool) -> None:
        for k, v in self.defaults:
            if not cells[k]:
                cells[k] = v
        key = _CONFIG_OF(cells)
        t = self.by_cells.get(key, -1)
        if t == -1:
            t = self.by_cells[key] = self._template(key)
        nums = None if t is None else _numbers(cells)
        if t is None or nums is None:  # the slow, exact path: accepted or rejected as build_row says
            self._slow(number, cells, raw, is_json)
            return
        self.config.append(t)
        self.nums.append(nums)
        self.rows.append(number)
        self.source.append(cells[_SOURCE])

    def _template(self, key: tuple[str, ...]) -> int | None:
        cells = {**dict(zip(CONFIG, key, strict=True)), **_PLACEHOLDER, "source": "-"}
        got = build_row(cells, file=self.file, row=1, **self.known)
        if isinstance(got, Rejected):
            return None
        self.templates.append(got)
        return len(self.templates) - 1

    def _slow(self, number: int, cells: list[str], raw: Callable[[], dict[str, str]], is_json: bool) -> None:
        got = build_row(dict(zip(COLUMNS, cells, strict=True)), file=self.file, row=number, **self.known)
        if isinstance(got, Rejected):
            lacks = is_json and not (cells[_AT["hardware"]] and cells[_AT["tp"]])
            reason = f"{JSON_LACKS} ({got.reason})" if lacks else got.reason
            self.rejected.append(got.model_copy(update={"raw": raw(), "reason": reason}))
            return
        self.templates.append(got)
        self.config.append(len(self.templates) - 1)
        self.nums.append(tuple(math.nan if v is None else float(v) for v in
                               (got.concurrency, got.input_len, got.output_len, *(getattr(got, m) for m in METRICS))))
        self.rows.append(number)
        self.source.append(got.source)

    def table(self) -> RowTable:
        nums = np.array(self.nums, dtype=float).reshape(-1, 3 + len(METRICS))
        cols = {k: np.ascontiguousarray(nums[:, j]) for j, k in enumerate(("concurrency", "input_len", "output_len",
                                                                             *METRICS))}
        return RowTable(templates=self.templates, config=np.array(self.config, dtype=np.int64),
                        row=np.array(self.rows, dtype=np.int64), source=self.source, **cols)


_CONFIG_OF = itemgetter(*(_AT[c] for c in CONFIG))
_NUMS_OF = itemgetter(_AT["concurrency"], _AT["input_len"], _AT["output_len"], *(_AT[m] for m in METRICS))
_SOURCE = _AT["source"]
_CONC = _AT["concurrency"]


@lru_cache(maxsize=8192)
def _count(v: str) -> float | None:
    """A plain positive integer cell (`8`, `0016`), else None (the exact path decides)."""
    return float(v) if v.isascii() and v.isdigit() and int(v) >= 1 else None


def _metric(v: str) -> float | None:
    """A plain positive finite decimal (`12.5`, `1e3`), else None (the exact path decides)."""
    if not _PLAIN.fullmatch(v):
        return None
    x = float(v)
    return x if 0 < x < math.inf else None


def _numbers(cells: list[str]) -> tuple[float, ...] | None:
    """concurrency, input_len, output_len, ttft_ms, tpot_ms, output_tok_s of plain decimal cells, or None when
    any cell needs the exact path (another spelling, out of range, or no metric at all)."""
    c, i, o, m1, m2, m3 = _NUMS_OF(cells)
    conc = _count(c)
    inp = _count(i) if i else math.nan
    out = _count(o) if o else math.nan
    if conc is None or inp is None or out is None or not (m1 or m2 or m3):
        return None
    a = _metric(m1) if m1 else math.nan
    b = _metric(m2) if m2 else math.nan
    d = _metric(m3) if m3 else math.nan
    if a is None or b is None or d is None:
        return None
    return conc, inp, out, a, b, d


def _csv_reader(text: str, file: str) -> tuple[list[str], Iterator[list[str]]]:
    """The lower-case header and a csv reader over the data rows."""
    lines: Iterable[str] = _lines(text) if "\n" in text else io.StringIO(text, newline="")
    reader = csv.reader(lines)
    try:
        header = [h.strip().lower() for h in next(reader, [])]
    except csv.Error as err:
        raise AdvisorError(f"{file}: not a readable CSV ({err})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise AdvisorError(f"{file}: not a measurement CSV: missing column(s) {', '.join(missing)} "
                           f"(need {', '.join(REQUIRED_COLUMNS)}; see `advisor check --help`)")
    return header, reader


def _read_csv(b: _Builder, text: str, file: str, progress: Callable[[int], None] | None) -> None:
    """Every data row of a §3.4 CSV into `b`: the fast path inline (one configuration lookup, plain numbers), the
    exact path (`_Builder.add`) for anything else; blank rows are skipped but counted in row numbers."""
    header, reader = _csv_reader(text, file)
    width = len(header)
    # a missing column reads the "" appended after the row's own cells
    pick = itemgetter(*(header.index(c) if c in header else width for c in COLUMNS))
    pad, by_cells, defaults = [""] * (width + 1), b.by_cells, b.defaults
    add_config, add_nums, add_row, add_source = b.config.append, b.nums.append, b.rows.append, b.source.append
    number = 0
    try:
        for number, record in enumerate(reader, start=1):
            n = len(record)
            if n != width:
                if n > width and any(c.strip() for c in record[width:]):
                    b.rejected.append(Rejected(file=file, row=number, raw=_raw(header, record),
                                               reason=f"{n} cells but the header has {width}"))
                    continue
                record = (record + pad)[:width]
            cells = list(map(str.strip, pick(record + [""])))
            if not any(cells) and not any(c.strip() for c in record):
                continue  # blank line: not a measurement
            cells[_CONC] = benchmark_concurrency(cells[_CONC], cells[_SOURCE])
            t = None if defaults else by_cells.get(_CONFIG_OF(cells), -1)
            nums = _numbers(cells) if t is not None and t != -1 else None
            if t is None or t == -1 or nums is None:
                b.add(number, cells, partial(_raw, header, record), False)
            else:
                add_config(t)
                add_nums(nums)
                add_row(number)
                add_source(cells[_SOURCE])
            if progress is not None and not number % 16384:
                progress(number)
    except csv.Error as err:
        raise AdvisorError(f"{file}: not a readable CSV at row {number + 1} ({err})") from None


def _raw(header: list[str], record: list[str]) -> dict[str, str]:
    """A row's cells by column name, as a rejected row keeps them."""
    return dict(zip(header, record, strict=False))


def _lines(text: str) -> Iterator[str]:
    """Lines with their endings, split at \\n only (as csv wants them), without copying the whole text."""
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end + 1]
        start = end + 1


def read_table(path: str | Path, *, defaults: Mapping[str, object] | None = None,
               known_models: Callable[[str], bool] | None = None,
               known_hardware: Callable[[str], bool] | None = None,
               progress: Callable[[int], None] | None = None) -> tuple[RowTable, list[Rejected]]:
    """A §3.4 CSV or a vLLM bench-serve JSON (type from content) as a RowTable and the rejected rows with their
    reasons; `defaults` fill empty cells (the file's own values win); `progress(rows read)` now and then."""
    from advisor.calibrate import vllm_json

    path = Path(path)
    file = str(path)
    bad = sorted(set(defaults or {}) - set(COLUMNS))
    if bad:
        raise AdvisorError(f"defaults: unknown field(s) {', '.join(bad)} (allowed: {', '.join(COLUMNS)})")
    text = read_text(path)
    b = _Builder(file, defaults or {}, {"known_models": known_models, "known_hardware": known_hardware})
    if text.lstrip()[:1] in ("{", "["):
        for number, given, problem in vllm_json.bench_rows(text, file):
            if problem:
                b.rejected.append(Rejected(file=file, row=number, reason=problem, raw=given))
            else:
                b.add(number, [(given.get(c) or "").strip() for c in COLUMNS], partial(dict, given), True)
        return b.table(), b.rejected
    _read_csv(b, text, file, progress)
    return b.table(), b.rejected


def read_measurements(
    path: str | Path,
    *,
    defaults: dict[str, object] | None = None,
    known_models: Callable[[str], bool] | None = None,
    known_hardware: Callable[[str], bool] | None = None,
) -> MeasurementSet:
    """Read a §3.4 CSV or a vLLM bench-serve JSON; type is detected from the content, not the name.

    `defaults` fills what the file lacks (empty CSV cells; JSON fields such as hardware, engine,
    tp, pp, dp, ep, weight_dtype, concurrency). Bad rows go to `rejected` with their reason. (Large files:
    `read_table` gives the same rows as columns.)
    """
    table, rejected = read_table(path, defaults=defaults, known_models=known_models, known_hardware=known_hardware)
    return MeasurementSet(rows=table.measurements(), rejected=rejected)
