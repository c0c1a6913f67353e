"""Invariants of the committed disaggregated measurements (tests/data/bench/silicon_disagg_dev.csv, written by
`python -m scripts.recover_disagg`; rules in tests/data/bench/README.md, "Disaggregated runs")."""

from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from advisor.calibrate.disagg_columns import COLUMNS, PLAN_STATUS, REQUIRED
from research.disagg_recipes import CELLS, recipe_cells
from research.disagg_recover import DYNAMO_TRTLLM, GPUS_PER_NODE, read_configs
from research.disagg_rows import run_key

BENCH = Path(__file__).parent / "data" / "bench"
CONFIGS = Path(__file__).parent / "data" / "configs"
SIDES = ("prefill", "decode")
SOURCE_ROWS = 1085  # the shared copy's rows (aiconfigurator silicon_sample.csv, mode=disagg)


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return _read(BENCH / "silicon_disagg_dev.csv")


def _id(row: dict[str, str]) -> str:
    return row["source"].split("id=", 1)[1]


def _rack_ids() -> list[str]:
    text = (BENCH / "rack_disagg_ids.txt").read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def _gpus(row: dict[str, str], side: str) -> int:
    return int(row[f"{side}_tp"]) * int(row[f"{side}_attention_dp"]) * int(row[f"{side}_pp"])


def test_columns_and_status(rows: list[dict[str, str]]) -> None:
    with open(BENCH / "silicon_disagg_dev.csv", encoding="utf-8") as fh:
        assert tuple(next(csv.reader(fh))) == COLUMNS
    assert len(rows) == SOURCE_ROWS + len(_rack_ids())
    assert {r["plan_status"] for r in rows} <= set(PLAN_STATUS)
    assert all(r[c] for r in rows for c in REQUIRED)
    assert len({_id(r) for r in rows}) == len(rows)


def test_every_row_has_worker_counts_or_an_unsettled_reason(rows: list[dict[str, str]]) -> None:
    for r in rows:
        has_pools = all(r[f"{s}_workers"] for s in SIDES)
        if r["plan_status"] == "unsettled":
            assert not has_pools and r["unsettled_reason"], _id(r)
            assert r["plan_rule"] in ("no-config", "several-configs")
        else:
            assert has_pools and not r["unsettled_reason"], _id(r)
            assert all(int(r[f"{s}_workers"]) >= 1 for s in SIDES)
    by_rule = Counter(r["plan_rule"] for r in rows)
    # recovered rows: the one deployment of the InferenceX configurations, or the same run's recorded copy
    assert by_rule["config"] + by_rule["same-run"] == sum(r["plan_status"] == "recovered" for r in rows) > 700
    assert sum(r["plan_status"] == "unsettled" for r in rows) < 0.15 * len(rows)


def _heads_and_experts(model: str) -> tuple[int, int] | None:
    path = CONFIGS / f"{model.replace('/', '--')}.json"
    if not path.exists():
        return None
    cfg = json.loads(path.read_text(encoding="utf-8"))
    experts = cfg.get("n_routed_experts") or cfg.get("num_local_experts") or cfg.get("num_experts") or 0
    return int(cfg["num_attention_heads"]), int(experts)


def test_plan_cells_decode_to_gpu_counts_the_plan_can_hold(rows: list[dict[str, str]]) -> None:
    checked = 0
    for r in (r for r in rows if r["plan_status"] != "unsettled"):
        per_worker = {s: _gpus(r, s) for s in SIDES}
        assert int(r["total_gpus"]) == sum(int(r[f"{s}_workers"]) * per_worker[s] for s in SIDES), _id(r)
        gpn = GPUS_PER_NODE[r["hardware"]]
        assert int(r["nodes"]) == sum(int(r[f"{s}_workers"]) * math.ceil(per_worker[s] / gpn) for s in SIDES)
        if r["hardware"] in ("gb200", "gb300"):  # one NVL72 NVLink domain (Dynamo's sbatch --segment)
            assert int(r["total_gpus"]) <= 72, _id(r)
        facts = _heads_and_experts(r["model"])
        if facts is None:  # nvidia/Qwen3-32B-NVFP4 (2 rows): no config in tests/data/configs
            continue
        heads, experts = facts
        for s in SIDES:
            moe_tp, moe_ep = int(r[f"{s}_moe_tp"]), int(r[f"{s}_moe_ep"])
            assert heads % int(r[f"{s}_tp"]) == 0, (_id(r), s)  # attention TP splits the heads
            if experts and moe_tp and moe_ep:  # MoE cells of a MoE model (0: not stated, some vLLM rows)
                assert moe_tp * moe_ep == int(r[f"{s}_tp"]) * int(r[f"{s}_attention_dp"]), (_id(r), s)
                assert moe_ep <= experts
            checked += 1
    assert checked > 1500


def test_decode_batch_is_users_per_decode_rank(rows: list[dict[str, str]]) -> None:
    for r in rows:
        if r["plan_status"] == "unsettled" or not r["concurrency"]:
            continue
        ranks = int(r["decode_workers"]) * int(r["decode_attention_dp"])
        assert int(r["decode_batch"]) == math.ceil(int(r["concurrency"]) / ranks), _id(r)
        assert r["prefill_batch"] == "1"


def test_the_dynamo_to_engine_version_map_is_applied(rows: list[dict[str, str]]) -> None:
    trt = [r for r in rows if r["engine"] == "trtllm"]
    assert not [r for r in trt if r["engine_version"] in DYNAMO_TRTLLM]  # no Dynamo release left as engine_version
    mapped = [r for r in trt if r["dynamo_version"] in DYNAMO_TRTLLM]
    assert len(mapped) > 700
    for r in mapped:
        if "is the source's" in r["notes"]:  # a gap-analysis row naming its own release: kept, and said
            assert r["engine_version"] != DYNAMO_TRTLLM[r["dynamo_version"]][0]
        else:
            assert r["engine_version"] == DYNAMO_TRTLLM[r["dynamo_version"]][0], _id(r)
        if r["image"]:
            assert r["image"].endswith(f"tensorrtllm-runtime:{r['dynamo_version']}")
    assert Counter(r["engine_version"] for r in mapped)["1.2.0rc6.post2"] == sum(
        r["dynamo_version"] in ("0.8.1.post1", "0.8.1.post2") for r in mapped)


def test_repeats_point_at_the_kept_copy_of_the_same_run(rows: list[dict[str, str]]) -> None:
    by_id = {_id(r): r for r in rows}
    pools = [f"{s}_{k}" for s in SIDES for k in ("workers", "tp", "pp", "attention_dp", "moe_tp", "moe_ep")]
    repeats = [r for r in rows if r["repeat_of"]]
    assert repeats
    for r in repeats:
        kept = by_id[r["repeat_of"]]
        assert not kept["repeat_of"] and run_key(kept) == run_key(r)
        assert [kept[c] for c in pools] == [r[c] for c in pools]
    assert len({run_key(r) for r in rows}) == len(rows) - len(repeats)


def test_spec_columns(rows: list[dict[str, str]]) -> None:
    assert {r["spec_decoding"] for r in rows} <= {"", "none", "mtp"}
    for r in rows:
        if r["spec_decoding"] == "none":
            assert r["spec_tokens"] == "0"
        elif r["spec_decoding"] == "":
            assert r["spec_tokens"] == ""


def test_rack_rows_are_disaggregated_deployments_of_their_gpu_count(rows: list[dict[str, str]]) -> None:
    dev_ids = {_id(r) for r in _read(BENCH / "silicon_dev.csv")}
    by_id = {_id(r): r for r in rows}
    rack = _rack_ids()
    assert len(rack) == 42 and not dev_ids & set(rack)
    for rid in rack:
        r = by_id[rid]
        stored = int(r["source_cells"].split()[0].split("=")[1].split("/")[0])  # the source's tp_size
        assert r["hardware"] == "gb200" and r["plan_status"] == "recovered" and r["plan_rule"] == "config"
        assert int(r["total_gpus"]) == stored and int(r["nodes"]) == stored // 4  # 4 GPUs per GB200 tray


def test_every_config_reference_is_in_the_configs_table(rows: list[dict[str, str]]) -> None:
    table = {e.ref for e in read_configs(BENCH / "inferencex_disagg_configs.csv")}
    refs = {ref for r in rows for ref in r["config_ref"].split(" | ") if ref}
    assert refs and refs <= table
    assert all(r["config_ref"] for r in rows if r["plan_rule"] in ("config", "several-configs"))


def test_recipe_cells_are_the_recipes_and_make_the_ep_sizes_form(rows: list[dict[str, str]]) -> None:
    """Every row's redundant-expert, memory-fraction and all-to-all cells are what its recipes give (`recipe_cells`,
    README "Redundant experts, memory fraction, MoE all-to-all"); every settled SGLang DeepSeek decode worker whose
    EP does not divide 256 experts carries slots that make experts + slots divide it."""
    assert [{k: r[k] for k in CELLS} for r in rows] == [recipe_cells(r) for r in rows]
    carried = [r for r in rows if any(r[k] for k in CELLS)]
    assert len(carried) == 192 and {r["engine"] for r in carried} == {"sglang"}
    assert sum(r["decode_redundant_experts"] == "32" for r in carried) == 123
    assert sum(r["decode_moe_a2a"] == "deepep" for r in carried) == 123
    assert sum(r["prefill_moe_a2a"] == "deepep" for r in carried) == 82
    for r in rows:
        ep = int(r["decode_moe_ep"] or 1)
        if r["engine"] == "sglang" and r["plan_status"] != "unsettled" and "deepseek" in r["model"].lower() \
                and 256 % ep:
            assert (256 + int(r["decode_redundant_experts"] or 0)) % ep == 0, r["source"]


def test_max_batch_is_the_tensorrt_llm_recipes_and_mostly_its_file_names(rows: list[dict[str, str]]) -> None:
    """`*_max_batch` (scripts/recipe_batches.py): only TensorRT-LLM rows whose config_ref names a srt-slurm recipe
    carry it, both sides or neither; the recipe's file name states the decode batch (`batchN`) and holds the YAML's
    value in all but 13 rows (their recipe held another on the measurement date); 291 of the 519 with settled pools
    ran more users than decode workers x ranks x it."""
    carry = [r for r in rows if r["decode_max_batch"]]
    assert len(carry) == 535 and all(bool(r["prefill_max_batch"]) for r in carry)
    assert all(r["engine"] == "trtllm" and "recipes/trtllm/" in r["config_ref"] for r in carry)
    named = [re.search(r"_batch(\d+)_", r["config_ref"]) for r in carry]
    assert sum(1 for r, m in zip(carry, named, strict=True) if m and m.group(1) != r["decode_max_batch"]) == 13
    settled = [r for r in carry if r["decode_workers"]]
    slots = [int(r["decode_workers"]) * int(r["decode_attention_dp"] or 1) * int(r["decode_max_batch"])
             for r in settled]
    assert len(settled) == 519
    assert sum(1 for r, s in zip(settled, slots, strict=True) if int(r["concurrency"] or 0) > s) == 291


def test_lengths_are_drawn_as_each_client_drew_them(rows: list[dict[str, str]]) -> None:
    """`length_ratio` (`research/disagg_rows.py: client_length_ratio`): InferenceX's runs (its database dump's
    `dsr1_*` ids and its dated result files) drew lengths from 0.8 x to 1 x the stated ones, NVIDIA's 9
    aic-auto-gap-analysis runs ran them exactly; the aggregated rows of the same sources say the same."""
    from research.disagg_rows import client_length_ratio

    assert Counter(r["length_ratio"] for r in rows) == {"0.8": 1118, "1": 9}
    assert all(r["length_ratio"] == client_length_ratio(_id(r)) for r in rows)
    assert {r["engine"] for r in rows if r["length_ratio"] == "1"} == {"sglang", "trtllm", "vllm"}
    with open(BENCH / "silicon_dev.csv", newline="", encoding="utf-8") as fh:
        agg = [r for r in csv.DictReader(fh) if r["length_ratio"]]
    same = [r for r in agg if _id(r).startswith("dsr1_") or _id(r)[:4].isdigit()]
    assert same and all(r["length_ratio"] == "0.8" for r in same)
