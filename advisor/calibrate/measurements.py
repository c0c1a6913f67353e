"""Measured serving rows (the CSV schema of `advisor check --help`): the schema and row validation.

`rowtable.read_measurements`, the file reader built on this module, reads the §3.4 CSV or a vLLM
`vllm bench serve --save-result` JSON (`advisor.calibrate.vllm_json`) and returns every row either as a
validated `Measurement` or as a `Rejected` entry with its row number and reason; nothing is dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from advisor.calibrate.columns import COLUMNS, METRICS, REQUIRED_COLUMNS
from advisor.engines import TRTLLM_ADP_BATCHING_WAIT_ITERS, Engine, KvDtype, WeightDtype, scheduled_ahead
from advisor.errors import AdvisorError

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


_KV_ALIASES = {"auto": "auto", "fp8": "fp8", "fp8e4m3": "fp8", "fp8e5m2": "fp8", "bf16": "bf16", "bfloat16": "bf16"}


def normalize_kv_dtype(value: str) -> str:
    """Map an engine's --kv-cache-dtype spelling (auto, fp8, fp8_e4m3, fp8_e5m2, bf16, bfloat16) to auto|fp8|bf16."""
    key = re.sub(r"[^a-z0-9]", "", value.lower())
    if key not in _KV_ALIASES:
        raise ValueError(f"kv_cache_dtype {value!r} is not one of auto, fp8 (fp8_e4m3, fp8_e5m2), bf16")
    return _KV_ALIASES[key]


def normalize_engine(value: str) -> str:
    """Map vLLM/SGLang/TensorRT-LLM spellings to vllm|sglang|trtllm."""
    key = re.sub(r"[^a-z0-9]", "", value.lower())
    if key not in _ENGINE_ALIASES:
        raise ValueError(f"engine {value!r} is not one of vllm, sglang, trtllm")
    return _ENGINE_ALIASES[key]


class Measurement(BaseModel):
    """One measured serving point in the §3.4 schema, plus where it came from (file, row).

    Validated once, from Python values or from CSV cells (strings): an empty cell is unknown (the field's
    default; an error for a required column), '8.0' is 8, and model / hardware are checked against the
    `known_model` / `known_hardware` callbacks given in the validation context (see `build_row`)."""

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
    spec_tokens: int = Field(default=0, ge=0, le=8)
    """Tokens drafted per step by speculative decoding (MTP / EAGLE); 0 (empty): none."""
    spec_accept_len: float | None = Field(default=None, ge=1, le=9, allow_inf_nan=False)
    """The run's mean acceptance length: tokens a sequence gained per verify step, the bonus token included
    (vLLM's "Mean acceptance length", 1 + accepted / drafts, `vllm/v1/spec_decode/metrics.py`; `vllm bench
    serve`'s `spec_decode_acceptance_length`); at most spec_tokens + 1. None (empty): not recorded, and a
    speculative row is then not predicted."""
    kv_cache_dtype: KvDtype | None = None
    """The run's --kv-cache-dtype; None (empty): the engine's default for the checkpoint."""
    length_ratio: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    """How the benchmark drew each request's lengths: uniformly between length_ratio x and 1 x input_len and
    output_len (`--random-range-ratio` of InferenceX's `benchmark_serving.py`); 1: every request exactly the
    stated lengths (aiperf with `--isl-stddev 0 --osl-stddev 0`); None (empty): not known."""
    batch_wait_iters: int = Field(default=0, ge=0)
    """TensorRT-LLM's `batch_wait_timeout_iters`: steps a context request may be held to batch with later ones
    (`cost/serving.py: batch_wait_steps`); 0 (empty): the engine's default, no holding."""
    batch_wait_ratio: float = Field(default=0.0, ge=0, le=1, allow_inf_nan=False)
    """TensorRT-LLM's `batch_wait_max_tokens_ratio`: held context requests are released once the step's tokens
    reach this share of `max_num_tokens`; 0 (empty): the default, which releases them at once."""
    recv_interval: int = Field(default=1, ge=1)
    """SGLang's `--scheduler-recv-interval`: the scheduler takes in new requests once every that many decode steps
    (`cost/serving.py: serve`); 1 (empty): the default, every step."""
    async_scheduling: int | None = Field(default=None, ge=0, le=1)
    """1 if the engine scheduled each step while the previous one ran (vLLM `--async-scheduling`, SGLang's overlap
    schedule, TensorRT-LLM's overlap scheduler), 0 if not (`--no-async-scheduling`, `--disable-overlap-schedule`,
    `disable_overlap_scheduler: true`); None (empty): the release's default (`engines.scheduled_ahead`)."""
    adp_timeout_iters: int = Field(default=0, ge=0)
    """TensorRT-LLM's `attention_dp_config.timeout_iters` with `enable_balance: true`: context requests are held
    until every attention-DP rank has one or this many steps were counted (`cost/serving.py:
    adp_balance_wait_steps`); 0 (empty): balancing off, the engine's default."""
    adp_batching_wait_iters: int = Field(default=TRTLLM_ADP_BATCHING_WAIT_ITERS, ge=0)
    """TensorRT-LLM's `attention_dp_config.batching_wait_iters`: further steps to hold them once every rank has
    one; empty: the engine's default (`engines.TRTLLM_ADP_BATCHING_WAIT_ITERS`)."""
    mem_fraction: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    """The share of GPU memory the engine was told to use: vLLM `--gpu-memory-utilization`, SGLang
    `--mem-fraction-static` (`cost/budget.py`); None (empty): the engine's default. Not TensorRT-LLM's
    `free_gpu_memory_fraction`, a share of what the weights leave."""
    top_p: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    """The nucleus (top-p) the run's requests were sampled with: the client's, or the model's generation config
    where the client sent none and the engine applies it; None (empty): greedy or unfiltered (`Settings.top_p`)."""
    concurrency: int = Field(ge=1)
    input_len: int | None = Field(default=None, ge=1)
    output_len: int | None = Field(default=None, ge=1)
    ttft_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    tpot_ms: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    output_tok_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    source: str
    row: int = Field(ge=1)
    file: str

    @field_validator("model", "hardware", "engine", "engine_version", "weight_dtype", "kv_cache_dtype", *METRICS,
                     mode="before")
    @classmethod
    def _cell(cls, v: object, info: ValidationInfo) -> object:
        """A text or metric cell, stripped; engine and weight_dtype spellings normalised."""
        if not isinstance(v, str):
            return v
        text = v.strip()
        if not text:
            return _unknown(info.field_name)
        return _NORMALIZE[info.field_name](text) if info.field_name in _NORMALIZE else text

    @field_validator("length_ratio", "batch_wait_ratio", "mem_fraction", "top_p", "spec_accept_len", mode="before")
    @classmethod
    def _ratio_cell(cls, v: object, info: ValidationInfo) -> object:
        """An empty cell is unknown; anything else is left for pydantic (a number in the field's range)."""
        return _unknown(info.field_name) if isinstance(v, str) and not v.strip() else v

    @field_validator(*_PLAN, "spec_tokens", "batch_wait_iters", "recv_interval", "async_scheduling",
                     "adp_timeout_iters", "adp_batching_wait_iters", "concurrency", *_LENGTHS,
                     mode="before")
    @classmethod
    def _int_cell(cls, v: object, info: ValidationInfo) -> object:
        """Spreadsheet spellings of an integer ('8', '8.0', '1e3'); anything else is left for pydantic to reject."""
        if not isinstance(v, str):
            return v
        text = v.strip()
        if not text:
            return _unknown(info.field_name)
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{info.field_name}={text!r} is not a number") from None
        # 0 means "not used" = 1: aiconfigurator's silicon_sample ids spell it `epnone`/`tp2_epnone`
        # and tests/data/bench/silicon_dev.csv carries those rows with dp=0/ep=0 (e.g. Qwen3-32B gb200 trtllm).
        if value == 0 and info.field_name in ("dp", "ep"):
            return 1
        return int(value) if value.is_integer() else text

    @field_validator("model", "hardware")
    @classmethod
    def _known(cls, v: str, info: ValidationInfo) -> str:
        """Ask the caller's catalog (context `known_model` / `known_hardware`); an AdvisorError from it is a no."""
        known = (info.context or {}).get(f"known_{info.field_name}")
        if known is None:
            return v
        try:
            ok = known(v)
        except AdvisorError as err:
            raise ValueError(f"unknown {info.field_name} {v!r}: {err}") from None
        if not ok:
            raise ValueError(f"unknown {info.field_name} {v!r}")
        return v

    @property
    def scheduled_ahead(self) -> int:
        """Steps the run's scheduler prepared ahead of the GPU (`serving.RunOptions`): the column, else the
        release's default."""
        if self.async_scheduling is not None:
            return self.async_scheduling
        return scheduled_ahead(self.engine or "vllm", self.engine_version)

    @model_validator(mode="after")
    def _mem_fraction_engine(self) -> Measurement:
        if self.mem_fraction is not None and self.engine == "trtllm":
            raise ValueError("mem_fraction is vLLM's --gpu-memory-utilization or SGLang's --mem-fraction-static; "
                             "TensorRT-LLM's free_gpu_memory_fraction is another quantity: leave it empty")
        return self

    @model_validator(mode="after")
    def _acceptance_within_drafts(self) -> Measurement:
        if self.spec_accept_len is not None and not self.spec_tokens:
            raise ValueError("spec_accept_len is the acceptance length of speculative decoding: give spec_tokens "
                             "(tokens drafted per step) too, or leave it empty")
        if self.spec_accept_len is not None and self.spec_accept_len > self.spec_tokens + 1:
            raise ValueError(f"spec_accept_len={self.spec_accept_len:g} exceeds spec_tokens + 1 = "
                             f"{self.spec_tokens + 1} (a step yields at most its drafts and one bonus token)")
        return self

    @model_validator(mode="after")
    def _has_metric(self) -> Measurement:
        if self.ttft_ms is None and self.tpot_ms is None and self.output_tok_s is None:
            raise ValueError("no measured value: ttft_ms, tpot_ms and output_tok_s are all empty")
        return self


_NORMALIZE: dict[str, Callable[[str], str]] = {"engine": normalize_engine, "weight_dtype": normalize_weight_dtype,
                                               "kv_cache_dtype": normalize_kv_dtype}


def _unknown(name: str | None) -> object:
    """An empty cell: the field's default; a required column cannot be empty."""
    if name is None or name in REQUIRED_COLUMNS:
        raise ValueError(f"{name} is empty")
    return Measurement.model_fields[name].default


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


# ---------------------------------------------------------------- one row

# How a failed pydantic check reads in a rejected row's reason, after the cell as written.
_SAYS = {
    "int_parsing": "is not an integer",
    "float_parsing": "is not a number",
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be a finite number > {gt:g}",
    "less_than_equal": "must be <= {le}",
    "finite_number": "must be a finite number > 0",
}
_NOT_USED_HINT = " (write 1, or leave empty, when not used)"


def _reason(err: ValidationError, cells: Mapping[str, str]) -> str:
    """One line naming every bad cell, e.g. "tp='x' is not a number; ttft_ms='-3' must be a finite number > 0"."""
    parts = []
    for e in err.errors(include_url=False):
        if e["type"] == "value_error":  # the validators' own sentences
            parts.append(str(e["ctx"]["error"]))
            continue
        name = str(e["loc"][0]) if e["loc"] else ""
        says = _SAYS[e["type"]].format(**e.get("ctx", {})) if e["type"] in _SAYS else f"({e['msg']})"
        hint = _NOT_USED_HINT if e["type"] == "greater_than_equal" and name in ("pp", "dp", "ep") else ""
        parts.append(f"{name}={cells.get(name, e['input'])!r} {says}{hint}")
    return "; ".join(parts)


# aiconfigurator's silicon_sample.csv stores `batch_size` per attention-DP rank (its `run_static` reports
# global_bs = batch_size x attention_dp_size), and for runs it stored with TP x EP ranks, per one of those
# (an id ending `c256_..._tp8_ep8` has batch 4 there); the benchmark's own concurrency is in the row id,
# `<isl>x<osl>_c<N>_`. tests/data/bench/silicon_dev.csv keeps the source's cell.
_AIC_ID_CONCURRENCY = re.compile(r"aiconfigurator\b.*\bid=\S*?_\d+x\d+_c(\d+)_")


def benchmark_concurrency(concurrency: str, source: str) -> str:
    """The concurrency cell of a row: the benchmark's concurrency that an aiconfigurator row id names (see
    `_AIC_ID_CONCURRENCY`), else the cell as written."""
    m = _AIC_ID_CONCURRENCY.search(source) if "aiconfigurator" in source else None
    return m.group(1) if m else concurrency


def _clean(raw: Mapping[str, str], defaults: Mapping[str, object]) -> dict[str, str]:
    """Stripped §3.4 cells; an empty cell takes the caller's default when one is given."""
    cells = {k: (raw.get(k) or "").strip() for k in COLUMNS}
    for key, value in defaults.items():
        if not cells[key] and value is not None:
            cells[key] = str(value)
    cells["concurrency"] = benchmark_concurrency(cells["concurrency"], cells["source"])
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
    cells["source"] = cells["source"] or f"{Path(file).name} row {row}"
    try:
        return Measurement.model_validate(
            {**cells, "row": row, "file": file},
            context={"known_model": known_models, "known_hardware": known_hardware},
        )
    except ValidationError as err:
        return Rejected(file=file, row=row, reason=_reason(err, cells), raw=dict(raw))


# ---------------------------------------------------------------- files


def read_text(path: Path) -> str:
    """The file's text (UTF-8, BOM stripped); one-line AdvisorError when missing, empty, binary or unreadable."""
    try:
        exists, is_file = path.exists(), path.is_file()
    except (OSError, ValueError) as err:  # a name the OS refuses (too long, NUL byte)
        name = str(path) if len(str(path)) <= 80 else f"{str(path)[:60]}... ({len(str(path))} characters)"
        raise AdvisorError(f"{name}: not a usable file name ({getattr(err, 'strerror', None) or err})") from None
    if not exists:
        raise AdvisorError(f"{path}: measurement file not found")
    if not is_file:
        raise AdvisorError(f"{path}: not a file")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise AdvisorError(f"{path}: cannot read ({err.strerror or err})") from None
    if b"\x00" in data:
        raise AdvisorError(f"{path}: binary file, expected a measurement CSV or vLLM bench JSON")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise AdvisorError(f"{path}: not UTF-8 text (byte {err.start}), expected CSV or JSON") from None
    if not text.strip():
        raise AdvisorError(f"{path}: file is empty")
    return text
