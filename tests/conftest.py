"""Shared fixtures. `../shared` (reference data next to the repo) is read at run time, never copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.arch.model import ModelArch
from advisor.hardware import HardwareProfile

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


@pytest.fixture(scope="session")
def hw() -> HardwareProfile:
    """The default box, rtx-pro-6000-server."""
    from advisor.hardware import load_profile

    return load_profile("rtx-pro-6000-server")


def catalog_arch(model: str) -> ModelArch:
    """A bundled catalog model's architecture (the test fails when it is missing)."""
    from advisor.catalog import lookup

    entry = lookup(model)
    assert entry is not None, model
    return entry.arch
