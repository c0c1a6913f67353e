"""Hardware profiles (`hwprofiles/*.toml`): load/validate, collective cost, placement, importers.

Public interface used by the cost model:
    load_profile(id_or_path) -> HardwareProfile, known_ids(), DEFAULT_HW
    advisor.hardware.comm.collective_time_us / allreduce_backend / allreduce_backend_reason
    advisor.hardware.placement.pick_gpus
"""

from advisor.hardware.load import DEFAULT_HW, known_ids, load_profile
from advisor.hardware.schema import HardwareProfile

__all__ = ["DEFAULT_HW", "HardwareProfile", "known_ids", "load_profile"]
