"""The KV-cache transfer of disaggregated serving: what one request's KV weighs on the GPUs that send and receive
it, the link that joins the prefill and decode pools, and how long a request waits for it.

Bytes, from the KV layout (`ModelArch.kv_bytes_per_token` and friends, the same functions memory uses): a decode GPU
holds the request's KV as its own plan shards it, so it receives exactly that: GQA heads sliced by its TP
(`max(1, kv_heads / tp)` of them, replicated below one head), MLA's latent whole on every TP rank (vLLM
`docs/features/nixl_connector_compatibility.md`: "MLA KV cache is replicated across TP workers, so heterogeneous
TP works but there is no head-splitting"), windowed layers only their window, linear/mamba layers their state; a
PP stage holds its layers. Every GPU of the receiving DP rank receives its share (TP x PP of them). The senders are
the prefill DP rank's GPUs; when the layout is replicated on one side (MLA, or GQA with fewer KV heads than the
prefill TP) only min(prefill TP, decode TP) of them are read ("When P TP > D TP, only a single read is executed
(redundant ranks are skipped)", same page; SGLang `disaggregation/mooncake/conn.py: send_kvcache_slice` sends head
slices "supporting generic M-to-N TP size configurations"), otherwise all of them, evenly.

The link: inside one fast domain the GPUs' own path (NVLink, PCIe peer-to-peer by socket, or PCIe through host
memory where the profile says peer access is off, `topology.p2p` and `topology.links`); between fast domains the
cluster's fabric, one NIC share per GPU at the rate NCCL achieves on it (`hardware/scaleout.py: nic_gbps_per_gpu`:
the node's NICs over its GPUs, less without GPUDirect RDMA, through host memory). Workers are placed node-major,
prefill first; a request's pair of workers is any pair (the PD routers pick each side independently: SGLang's router
in PD mode, vLLM's proxy, `trtllm-serve disaggregated`), so the pools' link is the mean over pairs.

Time: latency + the larger of the busiest sender's and each receiver's bytes over the per-GPU rate (senders and
receivers work in parallel on their own links).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.arch.model import ModelArch
from advisor.cost.plan import Plan
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster
from advisor.hardware.placement import pair_path
from advisor.hardware.scaleout import nic_gbps_per_gpu
from advisor.hardware.schema import PATHS


@dataclass(frozen=True)
class KvBytes:
    """One request's KV in flight: bytes the busiest prefill GPU sends, bytes each decode GPU receives, the total."""

    send: float
    recv: float
    total: float


def replicated(arch: ModelArch, tp: int) -> bool:
    """Whether every TP rank of `tp` holds the same KV for some layer (MLA's latent; GQA below one head per rank)."""
    return any(g.kind == "mla" or (g.kind in ("full", "sliding") and g.kv_heads < tp) for g in arch.attn_groups)


def receive_bytes(arch: ModelArch, plan: Plan, kv_bytes: float, prompt: float) -> float:
    """Bytes of one request of `prompt` tokens one decode GPU holds at `plan` (its PP stage): full layers per token,
    windowed layers up to their window, linear/mamba state once."""
    full = arch.kv_bytes_per_token(plan.tp, kv_bytes) * prompt
    windowed = min(arch.windowed_kv_bytes_per_token(plan.tp, kv_bytes) * prompt,
                   arch.window_kv_bytes_per_seq(plan.tp, kv_bytes))
    return (full + windowed + arch.state_bytes_per_seq(plan.tp)) / plan.pp


def kv_bytes(arch: ModelArch, prefill: Plan, decode: Plan, kv_elem: float, prompt: float) -> KvBytes:
    """One request's KV between a prefill rank at `prefill` and a decode rank at `decode` (module docstring)."""
    recv = receive_bytes(arch, decode, kv_elem, prompt)
    total = recv * decode.tp * decode.pp
    readers = min(prefill.tp, decode.tp) if replicated(arch, prefill.tp) or arch.attention == "mla" else prefill.tp
    return KvBytes(send=total / (readers * prefill.pp), recv=recv, total=total)


@dataclass(frozen=True)
class KvLink:
    """What carries the KV between two GPUs: GB/s per GPU per direction, a fixed latency, and its source."""

    name: str
    gbps: float
    latency_us: float
    source: str

    def seconds(self, b: KvBytes | float) -> float:
        """Latency plus the larger side's bytes over the rate."""
        big = max(b.send, b.recv) if isinstance(b, KvBytes) else b
        return self.latency_us * 1e-6 + big / (self.gbps * 1e9)


@dataclass(frozen=True)
class PoolLink:
    """The link between two pools: the mean over (prefill worker, decode worker) pairs of each pair's link, kept
    as the pairs' links and their shares (a pair's time is its slowest GPU pair's)."""

    links: tuple[tuple[KvLink, float], ...]

    @property
    def main(self) -> KvLink:
        """The link most pairs use (what a reason names)."""
        return max(self.links, key=lambda lw: lw[1])[0]

    @property
    def seconds_per_byte(self) -> float:
        """Mean seconds per byte over the pairs."""
        return sum(w / (lk.gbps * 1e9) for lk, w in self.links)

    @property
    def latency_s(self) -> float:
        return sum(w * lk.latency_us * 1e-6 for lk, w in self.links)

    @property
    def gbps(self) -> float:
        """The pairs' effective rate (harmonic mean)."""
        return 1e-9 / self.seconds_per_byte

    def seconds(self, b: KvBytes) -> float:
        return self.latency_s + max(b.send, b.recv) * self.seconds_per_byte

    def describe(self) -> str:
        if len(self.links) == 1:
            return f"{self.main.name} ({self.main.gbps:,.1f} GB/s per GPU)"
        return " / ".join(f"{w:.0%} {lk.name} ({lk.gbps:,.1f} GB/s)" for lk, w in self.links)


def _local_link(hw: HardwareProfile, path: str) -> KvLink:
    """The profile's link of a path class inside one node (the nearest listed slower one when it lists none)."""
    topo = hw.topology
    by_path = {lk.path: lk for lk in topo.links}
    order = PATHS[PATHS.index(path):] + PATHS[:PATHS.index(path)][::-1]
    lk = next(by_path[p] for p in order if p in by_path)
    if hw.interconnect_class == "nvlink" and lk.path == "nvlink":
        name = "NVLink"
    elif not topo.p2p:
        name = "PCIe through host memory (GPU peer access off)"
    else:
        name = {"same_switch": "PCIe peer-to-peer (one switch)", "same_socket": "PCIe peer-to-peer (one socket)",
                "cross_socket": "PCIe peer-to-peer across sockets", "nvlink": "NVLink"}[lk.path]
        if hw.interconnect_class == "xgmi":
            name = "Infinity Fabric"
    return KvLink(name=name, gbps=lk.p2p_bw_gbps, latency_us=lk.latency_us, source=lk.source)


def fabric_link(cluster: Cluster) -> KvLink:
    """One GPU's share of the fabric between fast domains (every GPU of a node sending at once), at the rate a NIC
    achieves and through host memory without GPUDirect RDMA (`hardware/scaleout.py: nic_gbps_per_gpu`), with one
    network hop's latency (plus the local hop to host memory when staged)."""
    f = cluster.fabric
    if f is None:
        raise AdvisorError(f"{cluster.describe()}: the pools span fast domains and the cluster has no fabric")
    rate = nic_gbps_per_gpu(f.nics_per_node, f.nic_gbps, cluster.gpus_per_node, f.gpudirect_rdma)
    kind = {"infiniband": "InfiniBand", "roce": "RoCE", "ethernet": "Ethernet"}[f.kind]
    if f.gpudirect_rdma:
        return KvLink(name=f"{kind} ({f.name}, GPUDirect RDMA)", gbps=rate, latency_us=f.latency_us, source=f.source)
    local = _local_link(cluster.node, "cross_socket")
    return KvLink(name=f"{kind} ({f.name}) through host memory", gbps=min(rate, local.gbps),
                  latency_us=f.latency_us + local.latency_us, source=f"{f.source}; staged over: {local.source}")


def _pair_link(cluster: Cluster, a: range, b: range) -> KvLink:
    """The link between two workers' GPU sets: the fabric when they are not inside one fast domain, NVLink inside
    an NVLink domain (a node's or a rack's), else the slowest GPU pair's PCIe path class in the node."""
    if len({cluster.domain_of(g) for g in a} | {cluster.domain_of(g) for g in b}) > 1:
        return fabric_link(cluster)
    if _nvlinked(cluster):
        return _local_link(cluster.node, "nvlink")
    topo, n = cluster.node.topology, cluster.gpus_per_node
    worst = max(PATHS.index(pair_path(topo, i % n, j % n)) for i in a for j in b)
    return _local_link(cluster.node, PATHS[worst])


def _nvlinked(cluster: Cluster) -> bool:
    """Every GPU of a node in one NVLink (or xGMI) domain, so every pair of a fast domain is joined by it."""
    topo = cluster.node.topology
    return cluster.node.interconnect_class != "pcie" and bool(topo.nvlink_domains) \
        and sorted(topo.nvlink_domains[0]) == list(range(cluster.gpus_per_node))


# (node profile's id(), nodes, fabric, layout) -> (the profile, kept so that its id() is not reused, the link)
_CACHE: dict[tuple[int, int, str, int, int, int, int], tuple[HardwareProfile, PoolLink]] = {}


def pool_link(cluster: Cluster, prefill_gpus: int, x: int, decode_gpus: int, y: int) -> PoolLink:
    """The link between x prefill workers of `prefill_gpus` GPUs and y decode workers of `decode_gpus`, placed
    node-major from GPU 0, prefill first (module docstring); memoised per profile and layout."""
    key = (id(cluster.node), cluster.nodes, cluster.fabric.id if cluster.fabric else "", prefill_gpus, x,
           decode_gpus, y)
    if key in _CACHE:
        return _CACHE[key][1]
    if cluster.domains == 1 and _nvlinked(cluster):
        out = PoolLink(((_local_link(cluster.node, "nvlink"), 1.0),))  # one NVLink domain: every pair alike
    else:
        out = _pairs(cluster, prefill_gpus, x, decode_gpus, y)
    _CACHE[key] = (cluster.node, out)
    return out


def _pairs(cluster: Cluster, gp: int, x: int, gd: int, y: int) -> PoolLink:
    start = x * gp
    pre = [range(i * gp, (i + 1) * gp) for i in range(x)]
    dec = [range(start + j * gd, start + (j + 1) * gd) for j in range(y)]
    if cluster.domains > 1 and x * y > 64:  # many pairs: by fast domain only (a worker inside one domain or not)
        return _by_domain(cluster, pre, dec)
    count: dict[KvLink, int] = {}
    for a in pre:
        for b in dec:
            lk = _pair_link(cluster, a, b)
            count[lk] = count.get(lk, 0) + 1
    return PoolLink(tuple((lk, c / (x * y)) for lk, c in count.items()))


def _by_domain(cluster: Cluster, pre: list[range], dec: list[range]) -> PoolLink:
    """Share of worker pairs inside one fast domain, from each worker's domain (-1: it spans several)."""
    def dom(r: range) -> int:
        d = {cluster.domain_of(r[0]), cluster.domain_of(r[-1])}
        return d.pop() if len(d) == 1 else -1

    dp = np.bincount([dom(r) + 1 for r in pre], minlength=cluster.domains + 1)[1:]
    dd = np.bincount([dom(r) + 1 for r in dec], minlength=cluster.domains + 1)[1:]
    inside = float(np.sum(dp * dd)) / (len(pre) * len(dec))
    fast = _local_link(cluster.node, "nvlink" if _nvlinked(cluster) else "cross_socket")
    parts = [(fast, inside), (fabric_link(cluster), 1 - inside)]
    return PoolLink(tuple((lk, w) for lk, w in parts if w > 0))


def chunks(prompt: float, budget: float) -> int:
    """Prefill chunks of one prompt under a token budget per step."""
    return max(math.ceil(prompt / max(budget, 1.0)), 1)
