"""The reference tables of docs/ that are written from the code, never by hand: the measurement columns
(docs/measurements.md, from `advisor/calibrate/columns.py: COLUMNS` and the fields of
`advisor/calibrate/measurements.py: Measurement`, their constraints, defaults and attribute docstrings; the
disaggregated columns from `advisor/calibrate/disagg_columns.py: MEANING`) and the engine releases modelled
(docs/engines.md, from the release tables of `advisor/engines.py`).

    python -m scripts.schema_doc [--update]   # print the blocks; --update writes each between its markers
"""

from __future__ import annotations

import argparse
import ast
import inspect
import typing
from typing import Any

from advisor import engines
from advisor.calibrate import columns, measurements
from advisor.calibrate.measurements import Measurement
from advisor.calibrate.predict_rows import DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN
from scripts.readme_block import home, replace_block

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}

# What the fields without an attribute docstring in `Measurement` mean (the rest say it themselves).
MEANING = {
    "model": "The model as `advisor` resolves it: `ORG/NAME[@REVISION]`, a folder with `config.json`, or a config "
             "file.",
    "hardware": "A hardware profile id (`advisor hw list`).",
    "engine": "The serving engine (spellings such as `TensorRT-LLM` or `tensorrt_llm` are read as `trtllm`).",
    "engine_version": "The engine release the run used (`0.19.1`, `v0.5.9`, `1.2.0rc6`).",
    "weight_dtype": "The weight format the engine ran (`FP8`, `fp4`, `W4A16` and other spellings are read); a "
                    "format other than the checkpoint's own means the engine quantized it, or a ModelOpt export ran.",
    "tp": "Tensor-parallel size.",
    "pp": "Pipeline-parallel stages.",
    "dp": "Attention data-parallel ranks (0, as some sources write it, is read as 1).",
    "ep": "MoE expert-parallel size; it divides TP x DP (0 is read as 1).",
    "concurrency": "Users the benchmark kept in flight (its `--max-concurrency`).",
    "input_len": "Prompt tokens per request (the benchmark's mean).",
    "output_len": "Output tokens per request (the benchmark's mean).",
    "ttft_ms": "Measured mean time to first token, ms.",
    "tpot_ms": "Measured mean time per output token after the first, ms.",
    "output_tok_s": "Measured output tokens per second, all users together.",
    "source": "Where the row came from (a URL, a file, a benchmark id).",
}


def field_docstrings() -> dict[str, str]:
    """Attribute docstrings of `Measurement` (a string right after a field), one line each."""
    tree = ast.parse(inspect.getsource(measurements))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Measurement")
    out: dict[str, str] = {}
    for field, nxt in zip(cls.body, cls.body[1:], strict=False):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            out[field.target.id] = " ".join(inspect.cleandoc(nxt.value.value).split())
    return out


def _bounds(metadata: list[Any]) -> dict[str, float]:
    return {k: getattr(m, k) for m in metadata for k in ("ge", "gt", "le", "lt") if getattr(m, k, None) is not None}


def value_kind(name: str) -> str:
    """The values a cell may hold: the field's type, choices and bounds."""
    info = Measurement.model_fields[name]
    args = [a for a in typing.get_args(info.annotation) if a is not type(None)] or [info.annotation]
    base = args[0]
    if typing.get_origin(base) is typing.Literal:
        return ", ".join(f"`{v}`" for v in typing.get_args(base))
    b = _bounds(info.metadata)
    if base is int and b == {"ge": 0, "le": 1}:
        return "`0`, `1`"
    kind = {int: "integer", float: "number", str: "text"}[base]
    lo = f">= {b['ge']:g}" if "ge" in b else f"> {b['gt']:g}" if "gt" in b else ""
    hi = f"<= {b['le']:g}" if "le" in b else ""
    return " ".join(x for x in (kind, lo, "and" if lo and hi else "", hi) if x)


def empty_cell(name: str) -> str:
    """What an empty cell means for the column."""
    info = Measurement.model_fields[name]
    if name in columns.REQUIRED_COLUMNS:
        return "required: the row is rejected"
    if name in columns.METRICS:
        return "not measured (one of " + ", ".join(f"`{m}`" for m in columns.METRICS) + " is needed)"
    if name == "source":
        return "the file name and row number"
    if name == "engine":
        return "`vllm`"
    if name == "engine_version":
        return "the default release of the engine: " + ", ".join(
            f"{ENGINE_NAMES[e]} {v}" for e, v in engines.DEFAULT_ENGINE_VERSION.items())
    if name == "weight_dtype":
        return "the checkpoint's own format"
    if name in ("input_len", "output_len"):
        return f"unknown: predicted at {DEFAULT_INPUT_LEN if name == 'input_len' else DEFAULT_OUTPUT_LEN}, and said"
    if info.default is None:
        return "unknown"
    return f"`{info.default:g}`" if isinstance(info.default, float) else f"`{info.default}`"


def measurement_columns() -> str:
    """The block of docs/measurements.md: one row per column of the schema, in the schema's order."""
    docs = field_docstrings()
    missing = [c for c in columns.COLUMNS if c not in docs and c not in MEANING]
    if missing:
        raise SystemExit(f"no meaning for column(s) {', '.join(missing)}: give the field a docstring in "
                         "advisor/calibrate/measurements.py")
    lines = [f"{len(columns.COLUMNS)} columns, in this order (`advisor/calibrate/columns.py: COLUMNS`); extra "
             "columns are ignored. A run's conditions come before `concurrency`, its measured point after. "
             "Written by `python -m scripts.schema_doc` from the fields of "
             "`advisor/calibrate/measurements.py: Measurement`.", "",
             "| column | values | empty cell | meaning |", "|---|---|---|---|"]
    for name in columns.COLUMNS:
        meaning = docs.get(name) or MEANING[name]
        cells = (f"`{name}`", value_kind(name), empty_cell(name), meaning)
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def engine_releases() -> str:
    """The block of docs/engines.md: every release span whose memory accounting is modelled, with its source."""
    lines = ["Written by `python -m scripts.schema_doc` from `advisor/engines.py` (`VLLM_RELEASES`, "
             "`SGLANG_RELEASES`, `TRTLLM_RELEASES`); default release per engine: " + ", ".join(
                 f"{ENGINE_NAMES[e]} {v}" for e, v in engines.DEFAULT_ENGINE_VERSION.items()) + ".", "",
             "| engine | releases | GPU memory share | sampler warm-up | CUDA-graph estimate in the KV budget | "
             "KV size printed as | source (what changed at the first release) |",
             "|---|---|---:|---|---|---|---|"]
    for table in (engines.VLLM_RELEASES, engines.SGLANG_RELEASES, engines.TRTLLM_RELEASES):
        for r in table:
            share = f"{r.gpu_memory_utilization:g}" if r.gpu_memory_utilization else "heuristic"
            cells = (ENGINE_NAMES[r.engine], r.name, share, r.sampler, "yes" if r.graph_estimate else "no",
                     r.printed, r.source)
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


# What an empty cell of a disaggregated row means, where it is not "unknown" (`calibrate/disagg_predict.py`).
DISAGG_EMPTY = {"engine": "`vllm`", "weight_dtype": "the checkpoint's own format",
                "spec_decoding": "not recorded: predicted without speculation, and said",
                "concurrency": "not predicted (the users are the load every prediction is made at)",
                "tp": "`1`", "pp": "`1`", "attention_dp": "`1`", "moe_ep": "`1` (no expert parallelism)",
                "workers": "the pool is missing: the row is not predicted", "nodes": "as many as the pools need",
                "plan_status": "`recorded`", "repeat_of": "not a repeat", "source": "the file name and row number",
                "ttft_ms": "not measured: no error for it", "tpot_ms": "not measured: no error for it",
                "total_gpus": "not read (the pools give the GPUs)"}


def disagg_columns() -> str:
    """The block of docs/measurements.md on disaggregated rows: one row per column of
    `advisor/calibrate/disagg_columns.py: MEANING`, which are required, what an empty cell means."""
    from advisor.calibrate import disagg_columns as dc

    lines = [f"{len(dc.COLUMNS)} columns, in this order (`advisor/calibrate/disagg_columns.py: COLUMNS`); extra "
             "columns are ignored, a file is read as disaggregated when its header names a pool's cells "
             "(`prefill_*`, `decode_*`). Required: " + ", ".join(f"`{c}`" for c in dc.READ_REQUIRED) + ". "
             "Written by `python -m scripts.schema_doc` from `MEANING` there.", "",
             "| column | empty cell | meaning |", "|---|---|---|"]
    for name in dc.COLUMNS:
        key = name.split("_", 1)[1] if name.startswith(("prefill_", "decode_")) else name
        empty = "required: the file is refused" if name in dc.READ_REQUIRED and key != "workers" else \
            DISAGG_EMPTY.get(key, "unknown")
        cells = (f"`{name}`", empty, " ".join(dc.MEANING[name].split()))
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


BLOCKS = {"measurement-columns": measurement_columns, "engine-releases": engine_releases,
          "disagg-measurement-columns": disagg_columns}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="write each block into its file (docs/measurements.md, "
                                                          "docs/engines.md)")
    args = ap.parse_args(argv)
    for name, make in BLOCKS.items():
        text = make()
        print(text + "\n")
        if args.update:
            replace_block(home(name), name, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
