"""The bundled catalog is what the reader derives from the configs in tests/data/configs, holds no copied file, and
every published number in facts.toml has a source."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from advisor import catalog
from research.catalog_build import build_entry, load_facts

FACTS = load_facts()


@pytest.mark.parametrize("model_id", sorted(FACTS))
def test_entry_equals_what_the_reader_derives(configs_dir: Path, model_id: str) -> None:
    built = build_entry(model_id, FACTS[model_id], configs_dir)
    stored = json.loads(catalog.entry_path(model_id).read_text())
    assert stored == built.model_dump(mode="json"), "stale entry: run scripts/build_catalog.py tests/data/configs"


def test_entries_and_facts_agree() -> None:
    assert set(catalog.ids()) == set(FACTS)
    assert {p.name for p in catalog.ENTRIES.glob("*.json")} == {catalog.entry_path(m).name for m in FACTS}


def test_catalog_holds_no_copied_config(configs_dir: Path) -> None:
    """The catalog is written by the project: no entry is byte-identical to a config file it was built from
    (the configs themselves are test data in tests/data/configs, with their sources)."""
    configs = {hashlib.sha256(p.read_bytes()).hexdigest() for p in configs_dir.rglob("*.json")}
    assert len(configs) >= 30
    copies = [p.name for p in catalog.ENTRIES.glob("*.json") if hashlib.sha256(p.read_bytes()).hexdigest() in configs]
    assert not copies


def test_entries_are_not_configs() -> None:
    """An entry is the normalized architecture + facts, never a config.json with HF keys."""
    for path in catalog.ENTRIES.glob("*.json"):
        doc = json.loads(path.read_text())
        assert set(doc) == {"id", "arch", "config_source", "facts"}
        assert not {"architectures", "quantization_config", "rope_scaling", "num_hidden_layers"} & set(doc["arch"])


@pytest.mark.parametrize(("ref", "model_id"), [
    ("Kimi-K2.5", "moonshotai/Kimi-K2.5"),
    ("kimi-k2.5", "moonshotai/Kimi-K2.5"),
    ("MiniMax-M2.5", "MiniMaxAI/MiniMax-M2.5"),
    ("minimaxai/minimax-m2.5", "MiniMaxAI/MiniMax-M2.5"),
    ("DeepSeek-V3", "deepseek-ai/DeepSeek-V3"),
    ("openai/gpt-oss-120b", "openai/gpt-oss-120b"),
])
def test_lookup_by_id_or_alias(ref: str, model_id: str) -> None:
    entry = catalog.lookup(ref)
    assert entry is not None and entry.id == model_id
    assert entry.arch.model == model_id


@pytest.mark.parametrize("ref", ["Kimi", "MiniMax-M2", "org/unknown-model", ""])
def test_lookup_misses(ref: str) -> None:
    assert catalog.lookup(ref) is None


def test_no_name_points_to_two_entries() -> None:
    owners: dict[str, set[str]] = {}
    for e in catalog.all_entries():
        for name in [e.id, *e.facts.get("aliases", [])]:
            owners.setdefault(name.lower(), set()).add(e.id)
    assert {n: ids for n, ids in owners.items() if len(ids) > 1} == {}
    assert len(owners) > len(FACTS)  # some aliases exist


_SOURCE_OF = {"total_b": "total_source", "total_with_mtp_b": "total_source", "total_with_vision_b": "total_source",
              "active_b": "active_source", "mtp_b": "mtp_source", "checkpoint_gb": "checkpoint_source",
              "checkpoint_max_gb": "checkpoint_source"}


@pytest.mark.parametrize("model_id", sorted(FACTS))
def test_every_published_number_has_a_source_and_range(model_id: str) -> None:
    facts = FACTS[model_id]
    for key, value in facts.items():
        if key in _SOURCE_OF:
            assert facts.get(_SOURCE_OF[key]), f"{key} has no {_SOURCE_OF[key]}"
        if key.endswith("_range_b") or key.endswith("_range_gb"):
            low, high = value
            published = facts.get(key.replace("_range", ""))
            assert low < high and (published is None or low <= published <= high), key
    if "active_b" in facts:
        assert facts["active_convention"] in ("full", "excl_embedding", "excl_embeddings")
    if "overrides" in facts:
        assert facts["overrides"].get("reason"), "an override of a trimmed config needs its reason"
