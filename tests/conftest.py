"""Shared fixtures. `../shared` (reference data next to the repo) is read at run time, never copied."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared next to the repo (CI has it; the tests need it, so they never skip)."""
    assert SHARED.is_dir(), f"{SHARED} is missing: the tests read reference data from ../shared"
    return SHARED


@pytest.fixture(scope="session")
def configs_dir(shared_dir: Path) -> Path:
    """../shared/data/configs: HF config.json corpus (INDEX.md) with ModelOpt sidecars in _sidecars/."""
    return shared_dir / "data" / "configs"
