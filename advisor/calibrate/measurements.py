"""Measured serving rows (the CSV schema of `advisor check --help`): the schema, row validation and the file reader.

`read_measurements` reads the §3.4 CSV or a vLLM `vllm bench serve --save-result` JSON (see
`advisor.calibrate.vllm_json`) and returns every row either as a validated `Measurement` or as a
`Rejected` entry with its row number and reason; nothing is dropped silently.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from advisor.calibrate import vllm_json
from advisor.calibrate.columns import COLUMNS, METRICS, REQUIRED_COLUMNS
from advisor.errors import AdvisorError

WeightDtype = Literal["bf16", "fp8", "int4", "nvfp4", "mxfp4"]
Engine = Literal["vllm", "sglang", "trtllm"]

_PLAN = ("tp", "pp", "dp", "ep")
_LENGTHS = ("input_len", "output_len")

# Spellings seen in benchmark tables and checkpoint names -> our weight_dtype ids. "fp4" means
# NVFP4 (TensorRT-LLM perf-overview's "FP4" column is NVFP4, see tests/data/bench/README.md).
_DTYPE_ALIASES: dict[str, str] = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp8": "fp8",
    "float8": "fp8",
    "e4m3": "fp8",
    "fp8e4m3": "fp8",
    "float8e4m3fn": "fp8",
    "w8a8fp8": "fp8",
    "int4": "int4",
    "w4a16": "int4",
    "int4w4a16": "int4",
    "nvfp4": "nvfp4",
    "fp4": "nvfp4",
    "modeloptfp4": "nvfp4",
    "mxfp4": "mxfp4",
}
_ENGINE_ALIASES: dict[str, str] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "trtllm": "trtllm",
    "tensorrtllm": "trtllm",
}


def normalize_weight_dtype(value: str) -> str:
    """Map a spelling (FP8, NVFP4, fp4, BF16, bfloat16...) to one of bf16|fp8|int4|nvfp4|mxfp4."""
    key = re.sub(r"[^a-z0-9]", "", value.lower())
    if key not in _DTYPE_ALIASES:
        raise ValueError(f"weight_dtype {value!r} is not one of bf16, fp8, int4, nvfp4, mxfp4")
    return _DTYPE_ALIASES[key]


def normalize_engine(value: str) -> str:
    """Map vLLM/SGLang/TensorRT-LLM spellings to vllm|sglang|trtllm."""
    key = re.sub(r"[^a-z0-9]", "", value.lower())
    if key not in _ENGINE_ALIASES:
        raise ValueError(f"engine {value!r} is not one of vllm, sglang, trtllm")
    return _ENGINE_ALIASES[key]


class Measurement(BaseModel):
    """One measured serving point in the §3.4 schema, plus where it came from (file, row)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    hardware: str = Field(min_length=1)
    engine: Engine | None = None
    engine_version: str | None = None
    weight_dtype: WeightDtype | None = None  # None = the checkpoint's own format
    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    concurrency: int = Field(ge=1)
    input_len: int | None = Field(default=None, ge=1)
    output_len: int | None = Field(default=None, ge=1)
    ttft_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    tpot_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    output_tok_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    source: str
    row: int = Field(ge=1)
    file: str

    @field_validator("weight_dtype", mode="before")
    @classmethod
    def _dtype(cls, v: object) -> object:
        return normalize_weight_dtype(v) if isinstance(v, str) else v

    @field_validator("engine", mode="before")
    @classmethod
    def _engine(cls, v: object) -> object:
        return normalize_engine(v) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _has_metric(self) -> Measurement:
        if self.ttft_ms is None and self.tpot_ms is None and self.output_tok_s is None:
            raise ValueError("no measured value: ttft_ms, tpot_ms and output_tok_s are all empty")
        return self


class Rejected(BaseModel):
    """A row that could not be used, with its 1-based row number, the reason and the raw cells."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    row: int
    reason: str
    raw: dict[str, str]


class MeasurementSet(BaseModel):
    """Everything read from one file: valid rows and rejected rows (with reasons)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rows: list[Measurement]
    rejected: list[Rejected]


# ---------------------------------------------------------------- cell parsing (one row)


def _parse_int(name: str, text: str, errors: list[str]) -> int | None:
    """An integer >= 1 ("8" or "8.0"); appends a reason to `errors` when impossible."""
    try:
        value = float(text)
    except ValueError:
        errors.append(f"{name}={text!r} is not a number")
        return None
    if not math.isfinite(value) or value != int(value):
        errors.append(f"{name}={text!r} is not an integer")
        return None
    if value < 1:
        hint = " (write 1, or leave empty, when not used)" if name in ("pp", "dp", "ep") else ""
        errors.append(f"{name}={text!r} must be >= 1{hint}")
        return None
    return int(value)


def _parse_pos_float(name: str, text: str, errors: list[str]) -> float | None:
    """A finite float > 0; appends a reason to `errors` when impossible."""
    try:
        value = float(text)
    except ValueError:
        errors.append(f"{name}={text!r} is not a number")
        return None
    if not math.isfinite(value) or value <= 0:
        errors.append(f"{name}={text!r} must be a finite number > 0")
        return None
    return value


def _is_zero(text: str) -> bool:
    """True for a cell reading 0 (or 0.0)."""
    try:
        return float(text) == 0
    except ValueError:
        return False


def _check_known(name: str, value: str, known: Callable[[str], bool] | None, errors: list[str]) -> None:
    """Ask the caller's catalog whether `value` exists; an AdvisorError from it counts as 'no'."""
    if known is None:
        return
    try:
        ok = known(value)
    except AdvisorError as err:
        errors.append(f"unknown {name} {value!r}: {err}")
        return
    if not ok:
        errors.append(f"unknown {name} {value!r}")


def _clean(raw: Mapping[str, str], defaults: Mapping[str, object]) -> dict[str, str]:
    """Stripped §3.4 cells; an empty cell takes the caller's default when one is given."""
    cells = {k: (raw.get(k) or "").strip() for k in COLUMNS}
    for key, value in defaults.items():
        if not cells[key] and value is not None:
            cells[key] = str(value)
    return cells


def build_row(
    raw: Mapping[str, str],
    *,
    file: str,
    row: int,
    defaults: Mapping[str, object] | None = None,
    known_models: Callable[[str], bool] | None = None,
    known_hardware: Callable[[str], bool] | None = None,
) -> Measurement | Rejected:
    """Validate one row of §3.4 cells (strings; empty = unknown) into a Measurement or a Rejected."""
    cells = _clean(raw, defaults or {})
    errors: list[str] = []
    values: dict[str, object] = {}
    for key in ("model", "hardware"):
        if not cells[key]:
            errors.append(f"{key} is empty")
        values[key] = cells[key]
    if cells["model"]:
        _check_known("model", cells["model"], known_models, errors)
    if cells["hardware"]:
        _check_known("hardware", cells["hardware"], known_hardware, errors)
    for key, norm in (("engine", normalize_engine), ("weight_dtype", normalize_weight_dtype)):
        try:
            values[key] = norm(cells[key]) if cells[key] else None
        except ValueError as err:
            errors.append(str(err))
    values["engine_version"] = cells["engine_version"] or None
    if not cells["tp"]:
        errors.append("tp is empty")
    if not cells["concurrency"]:
        errors.append("concurrency is empty")
    for key in ("dp", "ep"):
        # 0 means "not used" = 1: aiconfigurator's silicon_sample ids spell it `epnone`/`tp2_epnone`
        # and tests/data/bench/silicon_dev.csv carries those rows with dp=0/ep=0 (e.g. Qwen3-32B gb200 trtllm).
        if _is_zero(cells[key]):
            cells[key] = "1"
    for key in (*_PLAN, "concurrency", *_LENGTHS):
        values[key] = _parse_int(key, cells[key], errors) if cells[key] else None
    for key in METRICS:
        values[key] = _parse_pos_float(key, cells[key], errors) if cells[key] else None
    if not errors and all(values[k] is None for k in METRICS):
        errors.append("no measured value: ttft_ms, tpot_ms and output_tok_s are all empty")
    if errors:
        return Rejected(file=file, row=row, reason="; ".join(errors), raw=dict(raw))
    for key in ("pp", "dp", "ep"):
        values[key] = values[key] or 1
    values["source"] = cells["source"] or f"{Path(file).name} row {row}"
    try:
        return Measurement.model_validate({**values, "row": row, "file": file})
    except ValidationError as err:  # belt and braces: the checks above should catch everything
        reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        return Rejected(file=file, row=row, reason=reason, raw=dict(raw))


# ---------------------------------------------------------------- files


def _read_text(path: Path) -> str:
    """The file's text (UTF-8, BOM stripped); one-line AdvisorError when missing, empty or binary."""
    if not path.exists():
        raise AdvisorError(f"{path}: measurement file not found")
    if not path.is_file():
        raise AdvisorError(f"{path}: not a file")
    data = path.read_bytes()
    if b"\x00" in data:
        raise AdvisorError(f"{path}: binary file, expected a measurement CSV or vLLM bench JSON")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise AdvisorError(f"{path}: not UTF-8 text (byte {err.start}), expected CSV or JSON") from None
    if not text.strip():
        raise AdvisorError(f"{path}: file is empty")
    return text


def _csv_rows(text: str, file: str) -> list[tuple[int, dict[str, str]]]:
    """(row number, cells by lower-case column name) for each non-blank data row of a §3.4 CSV."""
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        raise AdvisorError(f"{file}: not a readable CSV ({err})") from None
    header = [h.strip().lower() for h in records[0]]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise AdvisorError(
            f"{file}: not a measurement CSV: missing column(s) {', '.join(missing)} "
            f"(need {', '.join(REQUIRED_COLUMNS)}; see `advisor check --help`)"
        )
    out: list[tuple[int, dict[str, str]]] = []
    for number, record in enumerate(records[1:], start=1):
        if not any(cell.strip() for cell in record):
            continue  # blank line: not a measurement
        cells = dict(zip(header, record, strict=False))
        if len(record) > len(header) and any(c.strip() for c in record[len(header) :]):
            cells["__extra__"] = f"{len(record)} cells but the header has {len(header)}"
        out.append((number, cells))
    return out


def read_measurements(
    path: str | Path,
    *,
    defaults: dict[str, object] | None = None,
    known_models: Callable[[str], bool] | None = None,
    known_hardware: Callable[[str], bool] | None = None,
) -> MeasurementSet:
    """Read a §3.4 CSV or a vLLM bench-serve JSON; type is detected from the content, not the name.

    `defaults` fills what the file lacks (empty CSV cells; JSON fields such as hardware, engine,
    tp, pp, dp, ep, weight_dtype, concurrency). Bad rows go to `rejected` with their reason.
    """
    path = Path(path)
    file = str(path)
    bad = sorted(set(defaults or {}) - set(COLUMNS))
    if bad:
        raise AdvisorError(f"defaults: unknown field(s) {', '.join(bad)} (allowed: {', '.join(COLUMNS)})")
    text = _read_text(path)
    if text.lstrip()[:1] in ("{", "["):
        raw_rows = vllm_json.bench_rows(text, file)
    else:
        raw_rows = [(n, cells, cells.pop("__extra__", None)) for n, cells in _csv_rows(text, file)]
    rows: list[Measurement] = []
    rejected: list[Rejected] = []
    for number, cells, problem in raw_rows:
        if problem:
            rejected.append(Rejected(file=file, row=number, reason=problem, raw=cells))
            continue
        result = build_row(
            cells,
            file=file,
            row=number,
            defaults=defaults,
            known_models=known_models,
            known_hardware=known_hardware,
        )
        if isinstance(result, Measurement):
            rows.append(result)
        else:
            rejected.append(result)
    return MeasurementSet(rows=rows, rejected=rejected)
