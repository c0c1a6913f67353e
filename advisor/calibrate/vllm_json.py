"""vLLM `vllm bench serve --save-result` JSON -> §3.4 cells (strings), one result object per row.

Field names follow vllm/benchmarks/serve.py (`main_async` builds `result_json`: date, backend,
label, model_id, num_prompts, request_rate ("inf" or a number), max_concurrency, plus `--metadata
KEY=VALUE` pairs at top level; `benchmark` adds completed, failed, total_input_tokens,
total_output_tokens, output_throughput, mean_ttft_ms, mean_tpot_ms, spec_decode_* when speculative
decoding ran: its acceptance length and the drafts and draft tokens that give the tokens drafted per step).
`--append-result` writes one JSON object per line, so JSON lines are read too.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from advisor.calibrate.columns import COLUMNS, METRICS
from advisor.errors import AdvisorError

# §3.4 columns a `--metadata KEY=VALUE` pair may carry (the measurement columns come from the
# benchmark's own fields below).
_METADATA_COLUMNS = tuple(c for c in COLUMNS if c not in METRICS and c not in ("input_len", "output_len"))
_METRIC_FIELDS = {"ttft_ms": "mean_ttft_ms", "tpot_ms": "mean_tpot_ms", "output_tok_s": "output_throughput"}

BenchRow = tuple[int, dict[str, str], str | None]


def _load(text: str, file: str) -> list[Any]:
    """The JSON document as a list of elements (an object, an array, or JSON lines)."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise AdvisorError(f"{file}: JSON nested too deeply") from None
    except json.JSONDecodeError as whole_err:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            where = f"{whole_err.msg} at line {whole_err.lineno}"
            raise AdvisorError(f"{file}: not valid JSON ({where})") from None
        out = []
        for number, line in enumerate(lines, start=1):
            try:
                out.append(json.loads(line))
            except RecursionError:
                raise AdvisorError(f"{file}: line {number}: JSON nested too deeply") from None
            except json.JSONDecodeError as err:
                where = f"line {number}: {err.msg}"
                raise AdvisorError(f"{file}: not valid JSON or JSON lines ({where})") from None
        return out
    return doc if isinstance(doc, list) else [doc]


def _is_result(obj: Any) -> bool:
    return isinstance(obj, dict) and any(k in obj for k in _METRIC_FIELDS.values())


def _text(value: Any) -> str:
    """A JSON scalar as a cell: None -> '' (unknown), numbers via repr."""
    if value is None or isinstance(value, bool | dict | list):
        return ""
    return repr(value) if isinstance(value, float) else str(value).strip()


def _concurrency(obj: dict[str, Any]) -> str:
    """max_concurrency; with no cap and request_rate inf every prompt is sent at once (serve.py
    `get_request`), so concurrency = num_prompts; an open-loop finite rate leaves it unknown."""
    if obj.get("max_concurrency") is not None:
        return _text(obj["max_concurrency"])
    if _text(obj.get("concurrency")):
        return _text(obj["concurrency"])
    if str(obj.get("request_rate", "")).strip().lower() == "inf" and obj.get("num_prompts") is not None:
        return _text(obj["num_prompts"])
    return ""


def _mean_len(total: Any, completed: Any) -> str:
    """Average tokens per completed request, rounded to an integer (input_len / output_len)."""
    if not isinstance(total, int | float) or not isinstance(completed, int | float) or completed <= 0:
        return ""
    value = total / completed
    return str(round(value)) if math.isfinite(value) else ""


def _source(obj: dict[str, Any], file: str, index: int) -> str:
    """Provenance: the metadata `source` if given, else file name, object index, date and label."""
    if _text(obj.get("source")):
        return _text(obj["source"])
    parts = [f"vllm bench serve {Path(file).name} #{index}"]
    for key in ("date", "label", "backend"):
        if _text(obj.get(key)):
            parts.append(f"{key}={_text(obj[key])}")
    if isinstance(obj.get("failed"), int) and obj["failed"] > 0:
        parts.append(f"failed={obj['failed']}")
    return "; ".join(parts)


def _cells(obj: dict[str, Any], file: str, index: int) -> BenchRow:
    """One result object -> (index, §3.4 cells, problem or None)."""
    cells = {key: _text(obj.get(key)) for key in _METADATA_COLUMNS}
    cells["model"] = cells["model"] or _text(obj.get("model_id"))
    cells["concurrency"] = _concurrency(obj)
    cells["input_len"] = _mean_len(obj.get("total_input_tokens"), obj.get("completed"))
    cells["output_len"] = _mean_len(obj.get("total_output_tokens"), obj.get("completed"))
    for column, field in _METRIC_FIELDS.items():
        cells[column] = _text(obj.get(field))
    cells["source"] = _source(obj, file, index)
    problem = None
    if obj.get("spec_decode_acceptance_length") is not None:  # speculative decoding ran: its drafts and acceptance
        cells["spec_accept_len"] = _text(obj["spec_decode_acceptance_length"])
        cells["spec_tokens"] = cells["spec_tokens"] or _drafts_per_step(obj)
    if obj.get("completed") == 0:
        problem = "no completed requests (completed=0)"
    elif cells["spec_accept_len"] and not cells["spec_tokens"]:
        problem = (f"speculative decoding was on (acceptance length {cells['spec_accept_len']}) but its drafted "
                   "tokens per step are not in the file (spec_decode_num_drafts, spec_decode_draft_tokens): add "
                   "\"spec_tokens\": K to the result object (`vllm bench serve --metadata spec_tokens=K`)")
    return index, cells, problem


def _drafts_per_step(obj: dict[str, Any]) -> str:
    """Tokens drafted per verify step: spec_decode_draft_tokens / spec_decode_num_drafts, '' when not given."""
    drafts, tokens = obj.get("spec_decode_num_drafts"), obj.get("spec_decode_draft_tokens")
    if not isinstance(drafts, int | float) or not isinstance(tokens, int | float) or drafts <= 0:
        return ""
    return str(round(tokens / drafts))


def bench_rows(text: str, file: str) -> list[BenchRow]:
    """Every element of a bench-serve JSON as (1-based index, §3.4 cells, problem or None)."""
    elements = _load(text, file)
    if not any(_is_result(e) for e in elements):
        raise AdvisorError(
            f"{file}: JSON is not a vLLM `bench serve` result "
            "(no object has mean_ttft_ms, mean_tpot_ms or output_throughput)"
        )
    rows: list[BenchRow] = []
    for index, element in enumerate(elements, start=1):
        if not isinstance(element, dict):
            rows.append((index, {"value": _text(element)[:200]}, "not a JSON object"))
        elif not _is_result(element):
            keys = ", ".join(sorted(element)[:8])
            rows.append(
                (
                    index,
                    {k: _text(v)[:200] for k, v in element.items()},
                    f"not a bench-serve result (keys: {keys})",
                )
            )
        else:
            rows.append(_cells(element, file, index))
    return rows
