"""Clean the wide public benchmark table (tests/data/bench/public.csv) into the §3.4 measurement schema.

A row is kept only when its conditions are stated: integer concurrency, numeric input and output
length, tp, at least one of tpot/ttft/output tok/s, a hardware string that names one of our
profiles, an engine we model and a model we can name as an HF repo. Every dropped row keeps its
reasons. Column meanings and caveats: tests/data/bench/README.md.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from advisor.calibrate.measurements import COLUMNS, normalize_weight_dtype
from advisor.errors import AdvisorError
from advisor.files import atomic_output

PUBLIC_REQUIRED = (
    "model",
    "hf_repo",
    "precision",
    "engine",
    "engine_version",
    "hardware",
    "tp",
    "ep",
    "dp",
    "pp",
    "input_len",
    "output_len",
    "concurrency",
    "output_tok_s_total",
    "tpot_ms",
    "ttft_ms",
    "source",
    "notes",
)

# Hardware strings -> our ids (`advisor hw list`), first match wins. (pattern, id or None, reason/caveat).
# H100 PCIe (2.0 TB/s) and SXM (3.35 TB/s) differ by ~1.7x in HBM bandwidth (NVIDIA H100 datasheet),
# so a bare "H100" is dropped; H200 SXM and H200 NVL both have 4.8 TB/s HBM3e (NVIDIA H200 product
# page), so a bare "H200" maps to h200-sxm with a caveat.
_HARDWARE: tuple[tuple[str, str | None, str], ...] = (
    (r"rtx pro 6000.*max-q", None, "RTX PRO 6000 Max-Q (300 W variant) has no profile"),
    (r"rtx pro 6000.*server", "rtx-pro-6000-server", ""),
    (r"rtx pro 6000.*workstation", "rtx-pro-6000-ws", ""),
    (r"rtx pro 6000", None, "RTX PRO 6000 edition (Server/Workstation/Max-Q) not stated"),
    (r"\bgb300\b", "gb300", ""),
    (r"\bgb200\b", "gb200", ""),
    (r"\bgb10\b|dgx spark", None, "DGX Spark (GB10) has no profile"),
    (r"\bb300\b", "b300-sxm", ""),
    (r"\bb200\b", "b200-sxm", ""),
    (r"\bh200\b.*(sxm|dgx|hgx|p5e)", "h200-sxm", ""),
    (r"\bh200\b", "h200-sxm", "H200 form factor not stated (SXM assumed; NVL has the same HBM bandwidth)"),
    (r"\bh100\b.*(sxm|dgx|hgx)", "h100-sxm", ""),
    (r"\bh100\b", None, "H100 form factor (SXM or PCIe) not stated"),
    (r"\ba100\b.*(sxm|dgx|hgx)", "a100-sxm", ""),
    (r"\bmi300x\b", "mi300x", ""),
    (r"\bl40s\b", "l40s", ""),
    (r"rtx 4090", "rtx-4090", ""),
)
_ENGINES = (("tensorrt-llm", "trtllm"), ("trt-llm", "trtllm"), ("vllm", "vllm"), ("sglang", "sglang"))

# Model names whose HF repo is unambiguous. Repo ids as listed in data/configs/INDEX.md or in the
# hf_repo column of sibling rows of public.csv.
_BASE_REPOS: dict[str, str] = {
    "Qwen3.5-397B-A17B": "Qwen/Qwen3.5-397B-A17B",
    "Qwen3-235B-A22B": "Qwen/Qwen3-235B-A22B",
    "Qwen3-30B-A3B": "Qwen/Qwen3-30B-A3B",
    "GLM-5": "zai-org/GLM-5",
    "Llama-3.3-70B-Instruct": "meta-llama/Llama-3.3-70B-Instruct",
    "Llama-3.1-8B-Instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "Llama-4-Scout-17B-16E-Instruct": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "Llama-4-Maverick-17B-128E-Instruct": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "DeepSeek-R1-0528": "deepseek-ai/DeepSeek-R1-0528",
    "Kimi-K2-Instruct": "moonshotai/Kimi-K2-Instruct",
    "MiniMax-M2.5": "MiniMaxAI/MiniMax-M2.5",
    "MiniMax-M2.7": "MiniMaxAI/MiniMax-M2.7",
}
_REPO = re.compile(r"([\w.-]+/[\w.-]+)(\s*\(.*\))?")
_SPEC_DECODE = re.compile(
    r"\bMTP\s*(on\b|=\s*[1-9]|speculative)|with MTP|\bEAGLE|num_speculative_tokens\s*=\s*[1-9]", re.I
)
_KEY_NOTE = re.compile(r"median|ITL|derived|assumed|overload|per-GPU|approx|~|prefix caching|KV", re.I)


class Drop(Exception):
    """A row cannot be kept; the message is the reason ("category: detail")."""


@dataclass
class CleanResult:
    """Kept rows (§3.4 cells) and dropped rows (1-based data row number, reason)."""

    kept: list[dict[str, str]] = field(default_factory=list)
    dropped: list[tuple[int, str]] = field(default_factory=list)

    def summary(self) -> Counter[str]:
        """Dropped-row counts by reason category (the text before the first ':')."""
        return Counter(reason.split(":", 1)[0] for _, reason in self.dropped)


def map_hardware(text: str) -> tuple[str, str]:
    """Hardware string -> (our id, caveat or ''); raises Drop when no profile matches."""
    low = text.lower()
    for pattern, hw_id, note in _HARDWARE:
        if re.search(pattern, low):
            if hw_id is None:
                raise Drop(f"hardware: {note} ({text!r})")
            return hw_id, note
    raise Drop(f"hardware: no profile for {text!r}")


def map_engine(engine: str, version: str) -> tuple[str, str]:
    """(engine id, engine_version) from e.g. 'SGLang (lukealonso fork)', '0.5.9'; qualifier joins version."""
    low = engine.lower().strip()
    for prefix, engine_id in _ENGINES:
        if low.startswith(prefix):
            qualifier = re.search(r"\((.*)\)", engine)
            version = "" if version.strip().lower() in ("", "not stated") else version.strip()
            if qualifier:
                version = f"{version} [{qualifier.group(1)}]".strip()
            return engine_id, version
    raise Drop(f"engine: {engine!r} is not modelled (vllm, sglang, trtllm)")


def map_precision(text: str) -> tuple[str, str]:
    """Precision column -> (weight_dtype or '' for the checkpoint's own, caveat or '')."""
    low = text.strip().lower()
    caveat = f"precision {text.strip()}" if "kv" in low else ""
    if low in ("", "not stated") or low.startswith("native") or "native mixed" in low:
        return "", caveat
    first = re.split(r"[\s(/,]+", low)[0]
    try:
        return normalize_weight_dtype(first), caveat
    except ValueError:
        raise Drop(f"precision: {text!r} is not a supported weight_dtype") from None


def map_model(name: str, hf_repo: str, weight_dtype: str) -> tuple[str, str]:
    """HF repo id from hf_repo ('org/name [(note)]') or, failing that, the model name (needs a dtype)."""
    match = _REPO.fullmatch(hf_repo.strip())
    if match:
        return match.group(1), ""
    base = _BASE_REPOS.get(name.strip())
    if base is None:
        raise Drop(f"model: no unambiguous HF repo for {name!r} (hf_repo {hf_repo!r})")
    if not weight_dtype:
        raise Drop(f"model: checkpoint of {name!r} not stated and precision unknown")
    caveat = f"checkpoint {hf_repo.strip()}" if hf_repo.strip() else ""
    return base, caveat


def parse_length(name: str, text: str) -> tuple[int, str]:
    """'1024' -> 1024; '512 (max_tokens)' -> 512; '~20000 (±15%)' -> 20000 (approximate);
    '~0 (context 0)' -> 1 (a decode benchmark on an empty context; the schema needs >= 1)."""
    match = re.fullmatch(r"(~)?\s*(\d+)\s*(\(.*\))?", text.strip())
    if not match:
        raise Drop(f"{name}: not numeric ({text!r})")
    approx, value, note = match.group(1), int(match.group(2)), match.group(3) or ""
    if value == 0 and approx and name == "input_len":
        return 1, f"{name} {text.strip()} recorded as 1"
    if value < 1:
        raise Drop(f"{name}: must be >= 1 ({text!r})")
    return value, (f"{name} {text.strip()}" if approx or note else "")


def _int_cell(name: str, text: str, required: bool) -> str:
    """A plain positive integer cell, '' when empty and optional; Drop otherwise."""
    text = text.strip()
    if not text:
        if required:
            raise Drop(f"{name}: not stated")
        return ""
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise Drop(f"{name}: not a positive integer ({text!r})")
    return text


def _metric(text: str) -> str:
    """A positive finite number as a cell, else ''."""
    try:
        value = float(text)
    except ValueError:
        return ""
    return text.strip() if math.isfinite(value) and value > 0 else ""


def _note_caveat(notes: str) -> str:
    """The notes' key clauses (medians, derived values, KV dtype, ...) or its first clause, <= 160 chars."""
    clauses = [c.strip() for c in notes.split(";") if c.strip()]
    chosen = [c for c in clauses if _KEY_NOTE.search(c)] or clauses[:1]
    text = "; ".join(chosen)
    return text if len(text) <= 160 else text[:157] + "..."


def clean_row(raw: dict[str, str], number: int) -> dict[str, str]:
    """One public.csv row -> §3.4 cells; raises Drop with the first reason it cannot be kept."""
    if not re.fullmatch(r"\d+", raw["concurrency"].strip()) or int(raw["concurrency"]) < 1:
        stated = raw["concurrency"].strip() or f"empty; request_rate {raw.get('request_rate', '')!r}"
        raise Drop(f"concurrency: not a stated integer ({stated})")
    input_len, in_note = parse_length("input_len", raw["input_len"])
    output_len, out_note = parse_length("output_len", raw["output_len"])
    plan = {k: _int_cell(k, raw[k], required=(k == "tp")) for k in ("tp", "pp", "dp", "ep")}
    metrics = {
        "ttft_ms": _metric(raw["ttft_ms"]),
        "tpot_ms": _metric(raw["tpot_ms"]),
        "output_tok_s": _metric(raw["output_tok_s_total"]),
    }
    if not any(metrics.values()):
        raise Drop("metrics: no numeric tpot_ms, ttft_ms or output_tok_s_total")
    if _SPEC_DECODE.search(raw["source"] + " " + raw["notes"]):
        raise Drop("speculative decoding: MTP/EAGLE on, not a plain decode measurement")
    hardware, hw_note = map_hardware(raw["hardware"])
    engine, engine_version = map_engine(raw["engine"], raw["engine_version"])
    weight_dtype, dtype_note = map_precision(raw["precision"])
    model, model_note = map_model(raw["model"], raw["hf_repo"], weight_dtype)
    caveats = [c for c in (hw_note, model_note, dtype_note, in_note, out_note) if c]
    source = " | ".join(
        part
        for part in (
            raw["source"].strip(),
            f"public.csv row {number}",
            _note_caveat(raw["notes"]),
            ("cleaned: " + "; ".join(caveats)) if caveats else "",
        )
        if part
    )
    return {
        "model": model,
        "hardware": hardware,
        "engine": engine,
        "engine_version": engine_version,
        "weight_dtype": weight_dtype,
        **plan,
        "concurrency": raw["concurrency"].strip(),
        "input_len": str(input_len),
        "output_len": str(output_len),
        **metrics,
        "source": source,
    }


def read_public(path: Path) -> list[dict[str, str]]:
    """Rows of the wide public table; AdvisorError when the file or its columns are wrong."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise AdvisorError(f"{path}: file not found") from None
    except UnicodeDecodeError:
        raise AdvisorError(f"{path}: not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in PUBLIC_REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise AdvisorError(f"{path}: not the public benchmark table: missing column(s) {', '.join(missing)}")
    return [{k: (v or "") for k, v in row.items() if k is not None} for row in reader]


def clean_public(rows: list[dict[str, str]]) -> CleanResult:
    """Clean every row (1-based data row numbers); dropped rows keep their reason."""
    result = CleanResult()
    for number, raw in enumerate(rows, start=1):
        try:
            result.kept.append(clean_row(raw, number))
        except Drop as why:
            result.dropped.append((number, str(why)))
    return result


def write_csv(rows: list[dict[str, str]], path: Path) -> None:
    """Write §3.4 rows atomically (advisor.files): a failure leaves `path` untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
