"""A cluster: N nodes of one hardware profile joined by a scale-out fabric, and the fast domains inside it.

A *node* is what one profile describes (an 8-GPU HGX box, an 8x RTX PRO 6000 server, one 4-GPU GB200 compute
tray). A *fast domain* is the set of GPUs one collective can span without touching a NIC: the node's NVLink
domain, or the PCIe of one box; on an NVL72 rack it is the whole rack (`topology.rack_nodes` trays of 4 sharing
one NVSwitch domain of `topology.nvlink_domain_size` = 72 GPUs). More nodes than one fast domain holds are
several domains joined by the fabric (`Fabric`: per-node NICs, their rate, GPUDirect RDMA or host-staged).

GPUs are numbered node-major across the cluster (GPU g sits on node g // gpus_per_node, in fast domain
g // fast_domain_gpus); a plan's ranks map onto them in the engine's rank order (`advisor.cost.collectives`),
and `Cluster.span` says how many nodes and fast domains a group of ranks touches, hence which links its
collectives cross. One node with no `--nodes` is `Cluster(hw)`: one domain, no fabric, every answer as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from advisor.errors import AdvisorError
from advisor.hardware.schema import Fabric, HardwareProfile

# The planner's own bound (candidate plans grow with the GPU count); not a fact about any hardware.
MAX_GPUS = 1024


@dataclass(frozen=True)
class Span:
    """Where a group of ranks sits: `gpus` ranks over `nodes` nodes and `domains` fast domains, at most
    `per_domain` of them in one domain (a ring or tree crosses the fabric between domains)."""

    gpus: int
    nodes: int
    domains: int
    per_domain: int

    @property
    def crosses_fabric(self) -> bool:
        """True when some pair of the group talks over NICs (it spans more than one fast domain)."""
        return self.domains > 1


@dataclass(frozen=True)
class Cluster:
    """`nodes` copies of `node` joined by `fabric` (None: one node, or nodes inside one NVLink domain with no
    scale-out fabric listed)."""

    node: HardwareProfile
    nodes: int = 1
    fabric: Fabric | None = None

    @cached_property
    def gpus_per_node(self) -> int:
        return self.node.topology.num_gpus

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def rack_nodes(self) -> int:
        """Nodes one fast domain can hold: `topology.rack_nodes` where the NVLink domain spans nodes, else 1."""
        return self.node.topology.rack_nodes or 1

    @cached_property
    def fast_domain_gpus(self) -> int:
        """GPUs sharing one fast domain in this cluster: the node, or the NVLink domain across nodes (at most the
        cluster's own GPUs: 2 GB200 trays are an 8-GPU slice of a rack)."""
        return self.gpus_per_node * min(self.rack_nodes, self.nodes)

    @property
    def domains(self) -> int:
        """Fast domains in the cluster (the last may be partial: 20 trays = one rack + 2 trays of another)."""
        return -(-self.gpus // self.fast_domain_gpus)

    @property
    def fast_link(self) -> str:
        """What joins the GPUs of one fast domain: "NVLink", "xGMI" or "PCIe"."""
        return {"nvlink": "NVLink", "xgmi": "xGMI", "pcie": "PCIe"}[self.node.interconnect_class]

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1

    def node_of(self, gpu: int) -> int:
        return gpu // self.gpus_per_node

    def domain_of(self, gpu: int) -> int:
        return gpu // self.fast_domain_gpus

    def span(self, ranks: Iterable[int]) -> Span:
        """Nodes and fast domains a group of GPUs (cluster-wide indices) touches."""
        gpus = np.fromiter(ranks, dtype=np.int64)
        if not gpus.size:
            return Span(0, 0, 0, 0)
        bad = gpus[(gpus < 0) | (gpus >= self.gpus)]
        if bad.size:
            raise AdvisorError(f"GPU {int(bad[0])} is outside the cluster's {self.gpus} GPUs")
        _, per = np.unique(gpus // self.fast_domain_gpus, return_counts=True)
        return Span(gpus=int(gpus.size), nodes=int(np.unique(gpus // self.gpus_per_node).size), domains=int(per.size),
                    per_domain=int(per.max()))

    def span_of(self, n: int, stride: int = 1, first: int = 0) -> Span:
        """`span` of the n ranks first, first + stride, ... (a plan axis in the engine's rank order)."""
        return self.span(range(first, first + n * stride, stride))

    def domains_spanned(self, n: int, stride: int = 1, first: int = 0) -> int:
        """Fast domains a group of n ranks placed by a plan axis (`span_of`) touches; 1 means no NIC crossed."""
        return self.span_of(n, stride, first).domains

    def nodes_for(self, gpus: int) -> int:
        """Nodes a plan of `gpus` GPUs occupies when packed from GPU 0."""
        return -(-gpus // self.gpus_per_node)

    def links(self) -> list[dict[str, object]]:
        """The links a collective on this cluster can cross, fastest first: inside a node (its measured path
        classes), across the trays of an NVLink rack, between fast domains over the fabric; each with its GB/s per
        GPU per direction, latency and source (`hw show --nodes`)."""
        topo = self.node.topology
        out: list[dict[str, object]] = [
            {"link": f"{lk.path} inside a node", "gpus": self.gpus_per_node, "gbps_per_gpu": lk.p2p_bw_gbps,
             "latency_us": lk.latency_us, "source": lk.source} for lk in topo.links]
        if self.rack_nodes > 1 and self.nodes > 1:
            nv = max((lk for lk in topo.links if lk.path == "nvlink"), key=lambda lk: lk.p2p_bw_gbps, default=None)
            out.append({"link": f"NVLink across {min(self.rack_nodes, self.nodes)} nodes (one NVLink domain)",
                        "gpus": self.fast_domain_gpus, "gbps_per_gpu": nv.p2p_bw_gbps if nv else None,
                        "latency_us": nv.latency_us if nv else None,
                        "source": f"{topo.rack_nodes_source}; {nv.source if nv else ''}"})
        if self.fabric is not None and self.domains > 1:
            f = self.fabric
            out.append({"link": f"{f.name} between {self.domains} fast domains", "gpus": self.gpus,
                        "gbps_per_gpu": f.node_gbps / self.gpus_per_node, "latency_us": f.latency_us,
                        "source": f.source + ("" if f.gpudirect_rdma else "; without GPUDirect RDMA: through host "
                                                                          "memory")})
        return out

    def describe(self) -> str:
        """One line: what the cluster is and which links join it."""
        hw, topo = self.node, self.node.topology
        if not self.multi_node:
            return f"1 x {hw.id} ({self.gpus} GPUs, {self.fast_link} inside the node)"
        inside = (f"{self.fast_link} across up to {self.rack_nodes} nodes ({topo.nvlink_domain_size}-GPU NVLink "
                  "domain)" if self.rack_nodes > 1 else f"{self.fast_link} inside each node")
        between = ("" if self.domains == 1 else
                   f"; {self.domains} domains over {self.fabric.name}" if self.fabric else "; no fabric")
        return f"{self.nodes} x {hw.id} ({self.gpus} GPUs): {inside}{between}"


def load_cluster(hw: HardwareProfile, nodes: int = 1, fabric: str | None = None) -> Cluster:
    """`nodes` nodes of `hw` over `fabric` (an id from the profile's `fabrics`; default the first listed).

    Refused in one line: fewer than one node; a fabric the profile does not list; more nodes than one NVLink
    domain holds (or more than one node of a box) when the profile lists no scale-out fabric; more GPUs than
    the planner handles (`MAX_GPUS`)."""
    if nodes < 1:
        raise AdvisorError(f"--nodes {nodes}: a cluster has at least 1 node")
    listed = [f.id for f in hw.fabrics]
    if fabric is not None and fabric not in listed:
        have = f"lists {', '.join(listed)}" if listed else "lists no scale-out fabric"
        raise AdvisorError(f"--fabric {fabric}: {hw.id} {have}")
    chosen = next((f for f in hw.fabrics if f.id == fabric), hw.fabrics[0] if hw.fabrics else None)
    rack = hw.topology.rack_nodes or 1
    if nodes > rack and chosen is None:
        if rack > 1:
            raise AdvisorError(
                f"--nodes {nodes}: one {hw.id} NVLink domain holds {rack} nodes "
                f"({hw.topology.nvlink_domain_size} GPUs) and the profile lists no scale-out fabric to join racks")
        raise AdvisorError(f"--nodes {nodes}: {hw.id} lists no scale-out fabric to join nodes (add [[fabrics]] "
                           "to the profile)")
    if nodes * hw.topology.num_gpus > MAX_GPUS:
        raise AdvisorError(f"--nodes {nodes}: {nodes * hw.topology.num_gpus} GPUs; the advisor plans up to "
                           f"{MAX_GPUS}")
    return Cluster(node=hw, nodes=nodes, fabric=chosen if nodes > 1 else None)
