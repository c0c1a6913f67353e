"""What each measured disaggregated run deployed: worker counts, plans and batches recovered from the InferenceX
configurations in force on its measurement date (tests/data/bench/README.md, "Disaggregated runs").

Inputs: the rows of `silicon_disagg_dev.csv` (aiconfigurator `silicon_sample.csv`, `mode=disagg`), the source's
`silicon_data_source` of each row (image, measurement date; read by row id) and the table
`scripts.inferencex_disagg_configs` writes. `scripts.recover_disagg` is the command.

The source's rows come in two kinds. NVIDIA's own (`dsr1_*_cfg<N>` from an InferenceX database dump, and the
`aic-auto-gap-analysis` runs) record worker counts, plans as deployed and batches: `recorded`. The rows exported from
InferenceX result files (ids `2026_03_25_...`, `2026_04_06_...`) record none of these, and their plan cells hold
InferenceX's metadata instead (`metadata_cells`): those are matched against the configurations (`candidates`).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

SIDES = ("prefill", "decode")
PLAN = ("tp", "pp", "attention_dp", "moe_tp", "moe_ep")
GPUS_PER_NODE = {"gb200": 4, "gb300": 4, "b200-sxm": 8, "b300-sxm": 8, "h100-sxm": 8}
RUNNER = {"gb200": "gb200", "gb300": "gb300", "b200-sxm": "b200", "b300-sxm": "b300", "h100-sxm": "h100"}
FRAMEWORK = {"trtllm": "dynamo-trt", "sglang": "dynamo-sglang", "vllm": "dynamo-vllm"}
# A run happened on its measurement date, from the configuration then in force or from the pull request that merged
# it in the days after (InferenceX sweeps a change before it merges): configurations in force at any time in
# [measured - 1 day, measured + 7 days] are candidates.
WINDOW = (timedelta(days=-1), timedelta(days=8))

# TensorRT-LLM release inside each Dynamo TensorRT-LLM runtime image. The ai-dynamo wheels on PyPI pin it
# (`Requires-Dist: tensorrt-llm==...; extra == 'trtllm'` in each wheel's METADATA), and Dynamo's
# docs/reference/release-artifacts.md lists it per `tensorrtllm-runtime` tag. Where they differ the wheel wins:
# 0.8.1.post1 pins 1.2.0rc6.post2 (release-artifacts agrees; aiconfigurator's
# generator/config/backend_version_matrix.yaml and one revision of Dynamo's support-matrix.md say 1.2.0rc6.post1).
DYNAMO_TRTLLM: dict[str, tuple[str, str]] = {
    "0.5.1-rc0.pre3": ("1.1.0rc5", "pre-release image of 0.5.1, whose wheel pins tensorrt-llm==1.1.0rc5 (inferred: "
                                   "the pre-release's own pin is not published)"),
    "0.7.0.post2": ("1.2.0rc2", "Dynamo release-artifacts.md, tensorrtllm-runtime:0.7.0.post2 (no wheel of that tag)"),
    "0.8.0": ("1.2.0rc6.post1", "ai-dynamo 0.8.0 wheel and release-artifacts.md"),
    "0.8.1": ("1.2.0rc6.post1", "ai-dynamo 0.8.1 wheel: tensorrt-llm==1.2.0rc6.post1"),
    "0.8.1.post1": ("1.2.0rc6.post2", "ai-dynamo 0.8.1.post1 wheel: tensorrt-llm==1.2.0rc6.post2"),
    "0.8.1.post2": ("1.2.0rc6.post2", "ai-dynamo 0.8.1.post2 wheel: tensorrt-llm==1.2.0rc6.post2"),
    "0.8.1.post3": ("1.2.0rc6.post3", "ai-dynamo 0.8.1.post3 wheel: tensorrt-llm==1.2.0rc6.post3"),
}
_DYNAMO_IMAGE = re.compile(r"ai-dynamo/(tensorrtllm|sglang|vllm)-runtime:(\S+)$")


def provenance(text: str) -> dict[str, str]:
    """The `silicon_data_source` cell as a dict: `key=value` parts, and the bare image name under `image`."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(";")):
        if "=" in part:
            key, value = part.split("=", 1)
            out[key] = value
        elif part and "/" in part and ":" in part:
            out["image"] = part
    out["image"] = out.get("image", "").replace("#", "/")
    out["measured"] = out.get("measured", "")[:10]
    return out


@dataclass(frozen=True)
class Side:
    """One pool as deployed: `workers` of `gpus` GPUs each, attention DP over all of a worker's GPUs or TP, EP."""

    workers: int
    gpus: int
    dp_attn: bool
    ep: int

    def cells(self) -> dict[str, int]:
        """aiconfigurator's cells for it (its recorded rows): DEP8 = tp 1, attention_dp 8, moe_tp 1, moe_ep 8;
        TEP8 = tp 8, attention_dp 1, moe_tp 1, moe_ep 8; TP8 = tp 8, moe_tp 8, moe_ep 1."""
        return {"tp": 1 if self.dp_attn else self.gpus, "pp": 1, "attention_dp": self.gpus if self.dp_attn else 1,
                "moe_tp": self.gpus // self.ep, "moe_ep": self.ep}


@dataclass(frozen=True)
class Entry:
    """One row of the configurations table."""

    config: str
    file: str
    commit: str
    start: datetime
    until: datetime | None
    image: str
    key: tuple[str, str, str, str, int, int]  # model prefix, precision, runner, framework, isl, osl
    spec: str
    spec_tokens: str
    conc: tuple[int, ...]
    per_decode_worker: bool
    prefill: Side
    decode: Side
    meta: tuple[str, str, str]  # InferenceX's prefill tp, prefill ep, decode tp
    recipe: str
    ran_image: str  # the local squash file the GB200 launcher ran instead of `image`, if any

    def multiplier(self, concurrency: int) -> int | None:
        """1 if the entry ran `concurrency`, the decode worker count if it ran it as a per-worker value, else None."""
        if concurrency in self.conc:
            return 1
        if self.per_decode_worker and concurrency in {c * self.decode.workers for c in self.conc}:
            return self.decode.workers
        return None

    @property
    def total_gpus(self) -> int:
        return self.prefill.workers * self.prefill.gpus + self.decode.workers * self.decode.gpus

    @property
    def ref(self) -> str:
        recipe = f" {self.recipe}" if self.recipe else ""
        return f"InferenceX {self.file}@{self.commit} {self.config}{recipe}"


def _date(text: str) -> datetime | None:
    return datetime.fromisoformat(text).astimezone(UTC) if text else None


def read_configs(path: Path) -> list[Entry]:
    """The table `scripts.inferencex_disagg_configs` writes."""
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            sides = {s: Side(int(r[f"{s}_workers"]), int(r[f"{s}_gpus"]), r[f"{s}_dp_attn"] == "1",
                             int(r[f"{s}_ep"])) for s in SIDES}
            start = _date(r["first_date"])
            assert start is not None
            out.append(Entry(r["config"], r["file"], r["first_commit"], start, _date(r["until_date"]),
                             r["image"].replace("#", "/"),
                             (r["model_prefix"], r["precision"], r["runner"], r["framework"], int(r["isl"]),
                              int(r["osl"])),
                             r["spec"], r["spec_tokens"], tuple(int(c) for c in r["conc_list"].split()),
                             r["conc_per_decode_worker"] == "1", sides["prefill"], sides["decode"],
                             (r["prefill_tp_meta"], r["prefill_ep_meta"], r["decode_tp_meta"]), r["recipe"],
                             r["ran_image"]))
    return out


def model_prefix(model: str) -> str:
    """InferenceX's model prefix of a checkpoint id (DeepSeek-R1 and -V3 are both `dsr1` there)."""
    name = model.lower()
    for needle, prefix in (("deepseek", "dsr1"), ("gpt-oss", "gptoss"), ("glm-5", "glm5"), ("qwen3", "qwen3")):
        if needle in name:
            return prefix
    return name


def row_key(row: dict[str, str]) -> tuple[str, str, str, str, int, int]:
    precision = "fp4" if row["weight_dtype"] == "nvfp4" else row["weight_dtype"]
    return (model_prefix(row["model"]), precision, RUNNER[row["hardware"]], FRAMEWORK[row["engine"]],
            int(row["input_len"]), int(row["output_len"]))


def metadata_cells(row: dict[str, str], entry: Entry) -> str | None:
    """How the row's plan cells encode the entry, if they do.

    `metadata`: prefill_tp / prefill_moe_ep are InferenceX's prefill tp / ep and decode_tp its decode tp (the
    source then fills attention_dp 1, moe_tp = tp / ep, and repeats the prefill ep as decode_moe_ep);
    `total`: both tp cells hold the deployment's GPUs (the rows of 2025-11 and 2025-12-01/05)."""
    p_tp, p_ep, d_tp = row["prefill_tp"], row["prefill_moe_ep"], row["decode_tp"]
    if (p_tp, p_ep, d_tp) == entry.meta:
        return "metadata"
    if p_tp == d_tp == str(entry.total_gpus) and row["prefill_moe_tp"] == p_tp:
        return "total"
    return None


def in_window(entry: Entry, measured: str) -> bool:
    """Was the entry in force at some time in the row's window (`WINDOW` around its measurement date)?"""
    day = datetime.fromisoformat(measured + "T00:00:00+00:00")
    lo, hi = day + WINDOW[0], day + WINDOW[1]
    return entry.start < hi and (entry.until is None or entry.until > lo)


def candidates(row: dict[str, str], prov: dict[str, str], entries: Iterable[Entry],
               recorded: tuple[Side, Side] | None = None, strict: bool = True) -> list[tuple[Entry, int, str]]:
    """(entry, concurrency multiplier, cell encoding) of every entry that can have produced the row: same model
    prefix, precision, runner, framework and lengths, the row's image (when the source names one), in force in its
    window, holding its concurrency, and (`strict`) either deploying the `recorded` pools or encoded by the row's
    cells."""
    key, conc, image = row_key(row), int(row["concurrency"]), prov.get("image", "")
    out = []
    for e in entries:
        if e.key != key or not in_window(e, prov["measured"]) or (image and e.image != image):
            continue
        mult = e.multiplier(conc)
        if not mult:
            continue
        if not strict:
            enc: str | None = "any"
        elif recorded is not None:
            enc = "recorded" if (e.prefill, e.decode) == recorded else None
        else:
            enc = metadata_cells(row, e)
        if enc:
            out.append((e, mult, enc))
    return out


def side_of_cells(row: dict[str, str], side: str) -> Side:
    """A recorded row's pool: workers, GPUs per worker = tp x attention_dp x pp, attention DP, EP."""
    tp, pp, adp, ep = (int(row[f"{side}_{k}"] or 0) for k in ("tp", "pp", "attention_dp", "moe_ep"))
    return Side(int(row[f"{side}_workers"]), tp * pp * adp, adp > 1, ep or 1)


def decode_batch(concurrency: int, decode: Side) -> int:
    """Requests per decode rank at the row's concurrency: ceil(concurrency / (workers x attention-DP ranks)), the
    source's own `decode_batch_size` (every one of its 170 recorded rows with a concurrency is exactly that)."""
    ranks = decode.workers * (decode.gpus if decode.dp_attn else 1)
    return math.ceil(concurrency / ranks)


_SQUASH_RELEASE = re.compile(r"sglang\+v(\d[\w.]*?)\.sqsh$")


def engine_release(row: dict[str, str], image: str, ran: str = "") -> tuple[str, str, str]:
    """(engine release, Dynamo release, note) of a row: a Dynamo runtime image or a Dynamo release in the source's
    engine_version gives the Dynamo release, and for TensorRT-LLM the engine release it shipped (`DYNAMO_TRTLLM`).
    `ran`: the local squash file the launcher ran instead of the image (SGLang on GB200 before 2025-12-19): its
    release where its name gives one (`lmsysorg+sglang+v0.5.5.post2.sqsh`), else unknown."""
    version = row["engine_version"]
    m = _DYNAMO_IMAGE.search(image)
    dynamo = m.group(2) if m else ""
    if row["engine"] != "trtllm":
        if ran:
            rel = _SQUASH_RELEASE.search(ran)
            note = f"the launcher ran the local image {ran} instead of {image or 'the configured one'}"
            return (rel.group(1) if rel else ""), dynamo, note + ("" if rel else ": engine release unknown")
        if dynamo and version == dynamo:
            return "", dynamo, "engine release unknown: the source gives the Dynamo release only"
        return version, dynamo, ""
    dynamo = dynamo or (version if version in DYNAMO_TRTLLM else "")
    if not dynamo:
        return version, "", ""
    mapped, _why = DYNAMO_TRTLLM.get(dynamo, ("", ""))
    if version and version != dynamo and version != mapped:
        return version, dynamo, f"engine_version {version} is the source's; {dynamo} ships {mapped or 'unknown'}"
    return mapped, dynamo, ""
