"""NCCL inside one NVSwitch NVLink domain, for a group larger than the node whose terms were measured: the trays of
an NVL72 rack (GB200/GB300: 18 trays of 4 GPUs in one 72-GPU NVLink5 domain).

In an NVSwitch domain every GPU reaches every other at its own NVLink rate through the switches; on an NVL72 rack the
four GPUs of a tray have no links of their own between them either: "every NVLink port from every GPU lands directly
on the NVSwitch trays in the same rack, which together form a single non-blocking NVLink fabric"
(https://factryze.ai/scale-atlas/interconnect/nvl72-domain, not a vendor page). So a group of n GPUs costs what NCCL's
algorithms cost over that link whichever trays it spans, the same as on an HGX node of the same NVLink generation and
NVSwitch (an HGX B200 for GB200, B300 for GB300: their measured 2- and 4-GPU tables agree with the trays' within a
few percent, `scripts/nvswitch_fit.py`).

NCCL's own cost model (`src/graph/tuning.cc: ncclTopoTuneModel`, NVIDIA/nccl v2.30.7) times each algorithm and
protocol as a base latency, a latency per step and the bytes over a bandwidth, and runs the fastest. Here, with L the
profile's NVLink P2P rate per GPU per direction and f the nccl-tests bus factor (allreduce 2(n - 1)/n, others
(n - 1)/n):

- ring (allreduce: 2(n - 1) steps, all-gather and reduce-scatter: n - 1), for each protocol p of LL and Simple:
  `base_p + steps x hop_p + f S / (share_p L)`;
- all-to-all (n - 1 sends at once), for each protocol: `base_p + (n - 1) x peer_p + (n - 1)/n S / (share_p L)`;
- NVLS (NVLink SHARP: the switch reduces and multicasts; allreduce, all-gather, reduce-scatter on an NVSwitch):
  NCCL's latency `hwLatencies[NVLINK][NVLS]` (25 us, constant in ranks) `+ f S / (share_Simple L)`;

and the time is the fastest of them. The parameters (`nvswitch_params.json`: base, step and peer latencies in us,
the share of L each protocol reaches) belong to an NVLink generation, not to a GPU: they are fitted on the HGX
nodes' tables (`scripts/nvswitch_fit.py`) and predict the NVL72 trays' tables, which they never saw.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from advisor.hardware.comm import bus_factor, ring_steps
from advisor.hardware.schema import HardwareProfile

PARAMS = Path(__file__).with_name("nvswitch_params.json")
NCCL_NVLS_US = 25.0  # tuning.cc hwLatencies[NVLINK][NVLS] Simple (NVIDIA/nccl v2.30.7)
RING_OPS = ("allreduce", "allgather", "reducescatter")
PROTOCOLS = ("ll", "simple")


@lru_cache(maxsize=1)
def params() -> dict:
    """The fitted parameters of each NVLink generation and their source (`nvswitch_params.json`)."""
    return json.loads(PARAMS.read_text(encoding="utf-8"))


def link_gbps(hw: HardwareProfile) -> float:
    """The profile's NVLink P2P rate per GPU per direction (0 without NVLink)."""
    return max((lk.p2p_bw_gbps for lk in hw.topology.links if lk.path == "nvlink"), default=0.0)


def generation(hw: HardwareProfile) -> dict | None:
    """The parameters of the NVLink generation this profile's NVSwitch domain runs (matched by its NVLink rate), or
    None (no NVSwitch, or a generation with no fitted tables)."""
    if not hw.topology.nvswitch:
        return None
    rate = link_gbps(hw)
    return next((g for g in params()["generations"].values() if g["link_gbps"] == rate), None)


def _protocols(op: str, S: np.ndarray, n: int, gen: dict, link: float) -> list[np.ndarray]:
    """Each protocol's time of `op` on n ranks (module docstring)."""
    if op == "alltoall":
        table, steps, f = gen["alltoall"], n - 1, (n - 1) / n
    else:
        table, steps, f = gen["ring"], ring_steps(op, n), bus_factor(op, n)
    return [table[p]["base_us"] + steps * table[p]["step_us"] + f * S / (table[p]["link_share"] * link * 1e3)
            for p in PROTOCOLS]


def nvls_us(op: str, S: np.ndarray, n: int, gen: dict, link: float) -> np.ndarray:
    """NVLink SHARP: NCCL's constant NVLS latency plus the bytes at the Simple protocol's share of the link."""
    return NCCL_NVLS_US + bus_factor(op, n) * S / (gen["ring"]["simple"]["link_share"] * link * 1e3)


def nvswitch_us(op: str, nbytes: np.ndarray | float, n: int, gen: dict, link: float) -> np.ndarray:
    """Microseconds of NCCL `op` (allreduce, allgather, reducescatter, alltoall) of `nbytes` (nccl-tests size) over
    n ranks of one NVSwitch domain at `link` GB/s per GPU: the fastest protocol and algorithm (module docstring)."""
    S = np.asarray(nbytes, dtype=float)
    if n <= 1:
        return np.zeros_like(S)
    times = _protocols(op, S, n, gen, link)
    if op in RING_OPS:
        times.append(nvls_us(op, S, n, gen, link))
    return np.minimum.reduce(times)


def floor_busbw(op: str, n: int, gen: dict, link: float) -> tuple[float, float]:
    """(latency floor us, large-message bus bandwidth GB/s) of `op` on n ranks: the time of the smallest message and
    the fastest protocol's share of the link."""
    floor = float(nvswitch_us(op, np.array([0.0]), n, gen, link)[0])
    table = gen["alltoall"] if op == "alltoall" else gen["ring"]
    return floor, max(table[p]["link_share"] for p in PROTOCOLS) * link


def ring_latency(gen: dict) -> tuple[float, float]:
    """(base us, step us) of the LL ring: what a ring's latency is made of before it leaves the domain."""
    ll = gen["ring"]["ll"]
    return float(ll["base_us"]), float(ll["step_us"])
