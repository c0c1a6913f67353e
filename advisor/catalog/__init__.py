"""The bundled offline catalog: one JSON file per model in `entries/`, written by
`scripts/build_catalog.py` from config files and `facts.toml` (published counts with sources)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from advisor.arch.model import ModelArch

ENTRIES = Path(__file__).parent / "entries"


class CatalogEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    arch: ModelArch
    config_source: str
    facts: dict[str, Any]


def entry_path(model_id: str) -> Path:
    return ENTRIES / (model_id.replace("/", "--") + ".json")


@cache
def all_entries() -> tuple[CatalogEntry, ...]:
    return tuple(CatalogEntry.model_validate(json.loads(p.read_text())) for p in sorted(ENTRIES.glob("*.json")))


def ids() -> list[str]:
    return [e.id for e in all_entries()]


def lookup(ref: str) -> CatalogEntry | None:
    """Find by Hub id or alias, case-insensitively."""
    key = ref.lower()
    for entry in all_entries():
        names = [entry.id, *entry.facts.get("aliases", [])]
        if any(key == n.lower() for n in names):
            return entry
    return None
