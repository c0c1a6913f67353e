"""Which GPUs of a node an operator would use for a group of n, and the slowest hop inside a group."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.errors import AdvisorError
from advisor.hardware.schema import PATHS, HardwareProfile, Topology


def _member(groups: list[list[int]]) -> dict[int, int]:
    return {g: i for i, grp in enumerate(groups) for g in grp}


def pair_path(topo: Topology, a: int, b: int) -> str:
    """Path class between two GPUs: nvlink > same_switch > same_socket > cross_socket (best first)."""
    for groups, name in (
        (topo.nvlink_domains, "nvlink"),
        (topo.pcie_switches, "same_switch"),
        (topo.sockets, "same_socket"),
    ):
        m = _member(groups)
        if a in m and m.get(a) == m.get(b):
            return name
    return "cross_socket"


def group_path(topo: Topology, gpus: Sequence[int]) -> str | None:
    """Slowest hop of a group (its worst pair path); None for fewer than two GPUs."""
    worst = -1
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            worst = max(worst, PATHS.index(pair_path(topo, a, b)))
    return PATHS[worst] if worst >= 0 else None


def _switch_order(topo: Topology, gpus: Sequence[int]) -> list[int]:
    """GPUs ordered so that those sharing a PCIe switch (or NVLink domain) are adjacent, big groups first."""
    sw = _member(topo.nvlink_domains or topo.pcie_switches)
    groups: dict[int, list[int]] = {}
    for g in gpus:
        groups.setdefault(sw.get(g, -1 - g), []).append(g)
    ordered = sorted(groups.values(), key=lambda grp: (-len(grp), grp[0]))
    return [g for grp in ordered for g in sorted(grp)]


def pick_gpus(hw: HardwareProfile, n: int) -> list[int]:
    """n GPUs the way an operator would place them: one NVLink domain, else one switch, else one socket
    (filling whole switches first), else whole sockets in order."""
    topo = hw.topology
    if n < 1 or n > topo.num_gpus:
        raise AdvisorError(f"--gpus {n}: {hw.id} has {topo.num_gpus} GPUs")
    for level in (topo.nvlink_domains, topo.pcie_switches, topo.sockets):
        fits = sorted((grp for grp in level if len(grp) >= n), key=lambda grp: (len(grp), min(grp)))
        if fits:
            return sorted(_switch_order(topo, fits[0])[:n])
    chosen: list[int] = []
    for sock in sorted(topo.sockets, key=lambda s: (-len(s), min(s))):
        chosen += _switch_order(topo, sock)[: n - len(chosen)]
        if len(chosen) == n:
            break
    return sorted(chosen)
