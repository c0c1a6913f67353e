"""Shared fixtures. Reference data lives in the repo: `tests/data/` (sources and licences in its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.arch.model import ModelArch
from advisor.hardware import HardwareProfile

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
CONFIGS = DATA / "configs"
BENCH = DATA / "bench"
COLLECTIVES = DATA / "collectives"
CASE_STUDY = REPO / "advisor" / "examples" / "case_study.csv"


@pytest.fixture(scope="session")
def configs_dir() -> Path:
    """tests/data/configs: HF config.json corpus (INDEX.md) with ModelOpt sidecars in _sidecars/."""
    return CONFIGS


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    """tests/data/bench: measured serving rows (silicon_dev.csv, public.csv and its cleaned rows)."""
    return BENCH


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
