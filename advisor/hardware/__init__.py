"""Hardware profiles (`hwprofiles/*.toml`): load/validate, collective cost, placement, importers.

Public interface used by the cost model:
    load_profile(id_or_path) -> HardwareProfile, known_ids(), DEFAULT_HW
    advisor.hardware.comm.collective_time_us / allreduce_backend / allreduce_backend_reason
    advisor.hardware.placement.pick_gpus
Loaded lazily so that `advisor --help` does not import pydantic/numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.hardware.ids import DEFAULT_HW

if TYPE_CHECKING:
    from advisor.hardware.load import known_ids, load_profile
    from advisor.hardware.schema import HardwareProfile

__all__ = ["DEFAULT_HW", "HardwareProfile", "known_ids", "load_profile"]


def __getattr__(name: str) -> Any:
    if name in ("known_ids", "load_profile"):
        from advisor.hardware import load

        return getattr(load, name)
    if name == "HardwareProfile":
        from advisor.hardware.schema import HardwareProfile

        return HardwareProfile
    raise AttributeError(f"module 'advisor.hardware' has no attribute {name!r}")
