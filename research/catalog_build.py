"""Build catalog entries from config files and the published facts in `advisor/catalog/facts.toml` (kept beside
the entries it writes, `advisor/catalog/entries/`)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from advisor.arch.local import read_json_file
from advisor.arch.reader import read_config
from advisor.catalog import ENTRIES, CatalogEntry

FACTS = ENTRIES.parent / "facts.toml"


def load_facts() -> dict[str, dict[str, Any]]:
    with FACTS.open("rb") as fh:
        return tomllib.load(fh)["models"]


def build_entry(model_id: str, facts: dict[str, Any], config_dir: Path) -> CatalogEntry:
    """Read the model's config (and sidecar) from `config_dir`, apply documented overrides, normalize."""
    path = config_dir / facts["config"]
    config = read_json_file(path)
    overrides = {k: v for k, v in facts.get("overrides", {}).items() if k != "reason"}
    target = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    target.update(overrides)
    sidecar = None
    if "sidecar" in facts:
        sidecar = read_json_file(config_dir / "_sidecars" / facts["sidecar"])
    arch = read_config(config, name=model_id, where=str(path), sidecar=sidecar)
    kept = {k: v for k, v in facts.items() if k not in ("config", "sidecar", "config_source")}
    return CatalogEntry(id=model_id, arch=arch, config_source=facts["config_source"], facts=kept)


def write_entry(entry: CatalogEntry, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / (entry.id.replace("/", "--") + ".json")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(entry.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path
