"""Parse `nvidia-smi topo -m` text into sockets, PCIe switches and NVLink domains.

Matrix legend (printed by nvidia-smi): X self; SYS crosses the SMP interconnect between NUMA nodes
(older drivers: SOC); NODE crosses host bridges inside one NUMA node; PHB crosses one host bridge (CPU);
PXB crosses several PCIe bridges without the host bridge; PIX at most one PCIe bridge; NV# a bonded set
of # NVLinks. GPUs that reach each other by PIX/PXB share a PCIe switch (so do GPUs that are both PIX from
one NIC, which is how HGX boards show it when NVLink hides the GPU-GPU PCIe path); NV# pairs share an
NVLink domain.
Sockets are grouped by the `NUMA Affinity` column (else `CPU Affinity`, else by non-SYS connectivity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.hardware.textfile import read_tool_text

WHAT = "`nvidia-smi topo -m` output"
LINK = re.compile(r"^(X|SYS|SOC|NODE|PHB|PXB|PIX|NV\d+)$")
DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+)$")
AFFINITY_COLS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


@dataclass
class TopoMatrix:
    """Parsed rows: link type per (row device, column device) and affinity per GPU."""

    columns: list[str]
    links: dict[str, dict[str, str]] = field(default_factory=dict)
    cpu_affinity: dict[int, str] = field(default_factory=dict)
    numa: dict[int, str] = field(default_factory=dict)
    skipped_rows: int = 0

    @property
    def gpus(self) -> list[int]:
        return sorted(int(r[3:]) for r in self.links if r.startswith("GPU"))


def _header(lines: list[str]) -> tuple[int, list[str], list[str]] | None:
    """(line index, device columns, affinity columns in order) of the matrix header."""
    for i, ln in enumerate(lines):
        aff = sorted((c for c in AFFINITY_COLS if c in ln), key=ln.index)
        rest = ln
        for c in aff:
            rest = rest.replace(c, " ")
        toks = rest.split()
        if toks and toks[0] == "GPU0" and all(DEVICE.match(t) for t in toks):
            return i, toks, aff
    return None


def parse_topo(path: Path) -> TopoMatrix:
    """Read the matrix; rows with unknown link codes or missing cells are skipped and counted."""
    text = read_tool_text(path, WHAT)
    lines = text.splitlines()
    head = _header(lines)
    if head is None:
        raise AdvisorError(f"{path}: not {WHAT}: no header row starting with GPU0")
    start, cols, aff_cols = head
    if not aff_cols:
        raise AdvisorError(f"{path}: not {WHAT}: its header has no {' or '.join(AFFINITY_COLS)} column")
    topo = TopoMatrix(columns=cols)
    for ln in lines[start + 1 :]:
        toks = ln.split()
        if not toks:
            continue
        if toks[0] in ("Legend:", "NIC") or toks[0].endswith(":"):
            break
        if not DEVICE.match(toks[0]):
            topo.skipped_rows += 1
            continue
        cells = toks[1 : 1 + len(cols)]
        if len(cells) != len(cols) or not all(LINK.match(c) for c in cells) or not _self_only(toks[0], cols, cells) \
                or (toks[0].startswith("GPU") and len(toks) - 1 - len(cols) > len(aff_cols)):
            topo.skipped_rows += 1
            continue
        topo.links[toks[0]] = dict(zip(cols, cells, strict=True))
        if toks[0].startswith("GPU"):
            extra = dict(zip(aff_cols, toks[1 + len(cols) :], strict=False))
            g = int(toks[0][3:])
            topo.cpu_affinity[g] = extra.get("CPU Affinity", "N/A")
            topo.numa[g] = extra.get("NUMA Affinity", "N/A")
    if not topo.gpus:
        raise AdvisorError(
            f"{path}: {WHAT} has no readable GPU rows ({topo.skipped_rows} skipped; truncated?)"
        )
    _check_matrix(path, topo)
    return topo


def _self_only(device: str, cols: list[str], cells: list[str]) -> bool:
    """A row links its device to itself (X) in its own column and nowhere else."""
    return all((c == "X") == (col == device) for col, c in zip(cols, cells, strict=True))


def _check_matrix(path: Path, topo: TopoMatrix) -> None:
    """What a matrix nvidia-smi printed always is, else one line: GPU columns GPU0..GPUn-1 in order, more than
    half of their rows readable (a truncated file keeps its first rows; one row of eight is not a topology), and
    each link the same both ways."""
    header = [c for c in topo.columns if c.startswith("GPU")]
    if header != [f"GPU{i}" for i in range(len(header))]:
        raise AdvisorError(f"{path}: not {WHAT}: the GPU columns are not GPU0..GPU{len(header) - 1} in order")
    if 2 * len(topo.gpus) <= len(header) and len(header) > 1:
        raise AdvisorError(f"{path}: not {WHAT}, or cut short: readable GPU rows {len(topo.gpus)} of {len(header)} "
                           f"({topo.skipped_rows} skipped)")
    for a, row in topo.links.items():
        for b, link in row.items():
            back = topo.links.get(b, {}).get(a)
            if back is not None and back != link:
                raise AdvisorError(f"{path}: not {WHAT}: {a}-{b} is {link} one way and {back} the other")


def _components(gpus: list[int], joined: set[tuple[int, int]]) -> list[list[int]]:
    """Connected components of the `joined` relation (union-find), sorted."""
    parent = {g: g for g in gpus}

    def find(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    for a, b in joined:
        parent[find(a)] = find(b)
    groups: dict[int, list[int]] = {}
    for g in gpus:
        groups.setdefault(find(g), []).append(g)
    return sorted((sorted(v) for v in groups.values()), key=lambda grp: grp[0])


def _pairs(topo: TopoMatrix, test: re.Pattern[str]) -> set[tuple[int, int]]:
    out = set()
    for a in topo.gpus:
        for b in topo.gpus:
            cell = topo.links[f"GPU{a}"].get(f"GPU{b}")
            if a < b and cell is not None and test.match(cell):
                out.add((a, b))
    return out


def _via_nic(topo: TopoMatrix) -> set[tuple[int, int]]:
    """GPU pairs that are both PIX (one bridge) from the same NIC: same switch even when NVLink hides it."""
    out = set()
    for row, cells in topo.links.items():
        if row.startswith("GPU"):
            continue
        near = sorted(int(c[3:]) for c, v in cells.items() if c.startswith("GPU") and v == "PIX")
        out |= {(a, b) for i, a in enumerate(near) for b in near[i + 1 :]}
    return out


def _sockets(topo: TopoMatrix) -> list[list[int]]:
    for key in (topo.numa, topo.cpu_affinity):
        if all(key.get(g, "N/A") not in ("N/A", "") for g in topo.gpus):
            groups: dict[str, list[int]] = {}
            for g in topo.gpus:
                groups.setdefault(key[g], []).append(g)
            return sorted(groups.values(), key=lambda grp: grp[0])
    return _components(topo.gpus, _pairs(topo, re.compile(r"^(NODE|PHB|PXB|PIX|NV\d+)$")))


def topology_summary(topo: TopoMatrix) -> dict[str, object]:
    """JSON document of `hw import-topo`: GPU index lists per socket, PCIe switch and NVLink domain."""
    gpus = topo.gpus
    shared = _pairs(topo, re.compile(r"^(PIX|PXB)$")) | _via_nic(topo)
    switches = [g for g in _components(gpus, shared) if len(g) > 1]
    nvlink = [g for g in _components(gpus, _pairs(topo, re.compile(r"^NV\d+$"))) if len(g) > 1]
    nics = {
        r: sorted(int(c[3:]) for c, v in cells.items() if c.startswith("GPU") and v in ("PIX", "PXB"))
        for r, cells in topo.links.items()
        if not r.startswith("GPU")
    }
    return {
        "gpus": gpus,
        "num_gpus": len(gpus),
        "sockets": _sockets(topo),
        "pcie_switches": switches,
        "nvlink_domains": nvlink,
        "nics_near_gpus": nics,
        "skipped_rows": topo.skipped_rows,
        "matrix": {r: cells for r, cells in topo.links.items() if r.startswith("GPU")},
    }
