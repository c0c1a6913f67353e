"""Collectives across the hierarchy: inside one fast domain (a node's NVLink or PCIe, or a whole NVL72 rack) the
node's measured terms (`hardware/comm.py`, unchanged for groups inside one node), and for a group beyond the node
inside an NVSwitch domain NCCL over that NVLink (`hardware/nvswitch.py`); across fast domains the scale-out
fabric. All times in microseconds, vectorised over the message size S (the nccl-tests size).

A group of n ranks spans K fast domains with m = n / K in each. NCCL's own cost model (`src/graph/tuning.cc:
ncclTopoTuneModel`, NVIDIA/nccl v2.30.7) sums a base latency, `nsteps - nInterSteps` intra-node steps and
`nInterSteps` network steps (ring allreduce: nsteps = 2(n - 1), nInterSteps = 2(K - 1); all-gather and
reduce-scatter: n - 1 and K - 1), or for its tree `2 ((m - 1) intraLat + log2(K) interLat)`: the latency floor grows
with the number of nodes. Here:

- intra step = (the measured floor of the op's term - NCCL's ring base latency 6.6 us, `baseLatencies` Ring/LL) / its
  ring steps; network step = the fabric's `latency_us` (NCCL's `hwLatencies[NET]` Ring/LL, 2.7 us, in every
  profile); inside a domain larger than the node (an NVL72 rack) the NVSwitch model's LL ring base and step
  (`nvswitch.ring_latency`), and its floor and bandwidth for the domain's part;
- flat ring: `lat + f S / busbw`, f the nccl-tests bus factor (allreduce 2(n - 1)/n, others (n - 1)/n) and busbw
  the slower of the domain's measured ring (its large-message busbw) and the domain's NICs: m x N, N the NIC GB/s
  per GPU as NCCL achieves it (one ring channel per NIC, each crossing the node boundary once: busbw = NICs x rate);
- two-level allreduce: reduce-scatter inside each domain (measured), allreduce of each rank's S / m slice across the
  K domains over its own NIC share (2 log2 K network hops, `2 (K - 1) / K x S / (m N)`), all-gather inside each
  domain (measured); NCCL takes the faster of ring and tree/NVLS-tree by its own model, so allreduce here is the
  faster of the flat ring and the two-level sum (on two nodes NCCL's pipelined tree can beat both: nccl-tests#196);
- all-gather / reduce-scatter across domains: the flat ring (NCCL's algorithm for them between nodes);
- p2p (a PP send): the slower of the node's measured send and its floor + S / N, plus one network hop;
- dispatch / combine of wide EP: `hardware/wide_ep.py`, the backend each engine runs (`hardware/a2a_backends.py`).

N = nics_per_node x nic_gbps / gpus_per_node x NIC_SHARE (x HOST_STAGING_SHARE without GPUDirect RDMA).
"""

from __future__ import annotations

from collections.abc import Callable
from math import ceil, log2

import numpy as np

from advisor.errors import AdvisorError
from advisor.hardware import nvswitch
from advisor.hardware.cluster import Cluster, Span
from advisor.hardware.comm import bus_factor, collective_timer, find_term, ring_steps, term_timer
from advisor.hardware.nvswitch import NCCL_NVLS_US, generation, link_gbps, nvswitch_us
from advisor.hardware.schema import CollectiveTerm, HardwareProfile

Timer = Callable[[np.ndarray], np.ndarray]

# NCCL ring busbw per NIC over the line rate: "24 [GB/s per 200 Gb/s NIC] (what we see ourselves in general on
# perfect setups)", S. Jeaugey (NVIDIA), https://github.com/NVIDIA/nccl-tests/issues/160
NIC_SHARE = 24.0 / 25.0
# Without GPUDirect RDMA the NIC reaches GPU memory through the CPU (S. Jeaugey, https://github.com/NVIDIA/nccl/
# issues/465: "simple GPU->CPU and CPU->NIC communication"); all_reduce busbw 79.72 GB/s staged vs 96.07 with
# GPUDirect RDMA, 2 GH200 nodes x 4 x 200 Gb/s, NCCL 2.24.3 (https://github.com/NVIDIA/nccl/issues/1579).
HOST_STAGING_SHARE = 79.72 / 96.07
NCCL_RING_BASE_US = 6.6  # tuning.cc baseLatencies, Ring/LL (NVIDIA/nccl v2.30.7)
OPS = ("allreduce", "allgather", "reducescatter", "alltoall", "p2p", "dispatch", "combine")


def nic_gbps_per_gpu(nics_per_node: int, nic_gbps: float, gpus_per_node: int, gpudirect: bool = True) -> float:
    """GB/s per GPU per direction over the node's NICs as NCCL achieves them (module docstring)."""
    share = NIC_SHARE * (1.0 if gpudirect else HOST_STAGING_SHARE)
    return nics_per_node * nic_gbps / gpus_per_node * share


def inter_steps(op: str, domains: int) -> int:
    """Network steps of a ring across K domains (tuning.cc nInterSteps): allreduce 2(K - 1), others K - 1."""
    return 2 * (domains - 1) if op == "allreduce" else domains - 1


def intra_step_us(floor_us: float, op: str, m: int) -> float:
    """Per-step latency inside a domain: its measured floor less NCCL's ring base latency, over its ring steps."""
    return max(floor_us - NCCL_RING_BASE_US, 0.0) / ring_steps(op, m) if m > 1 else 0.0


def ring_us(op: str, S: np.ndarray, n: int, domains: int, step_us: float, intra_busbw: float, nic_gbps: float,
            net_latency_us: float, base_us: float = NCCL_RING_BASE_US) -> np.ndarray:
    """NCCL ring over n ranks in K domains (m = n / K each): base + (nsteps - nInter) intra steps of `step_us` +
    nInter network steps, then f S / min(intra busbw, m x N); `intra_busbw` the domain's measured large-message
    busbw for the op."""
    m = max(n // domains, 1)
    steps, net = ring_steps(op, n), inter_steps(op, domains)
    lat = base_us + (steps - net) * step_us + net * net_latency_us
    busbw = min(intra_busbw, m * nic_gbps) if m > 1 else nic_gbps
    return lat + np.asarray(S, dtype=float) * bus_factor(op, n) / (busbw * 1e3)


def two_level_allreduce_us(S: np.ndarray, n: int, domains: int, rs_intra: Timer, ag_intra: Timer, nic_gbps: float,
                           net_latency_us: float) -> np.ndarray:
    """Reduce-scatter inside each domain, allreduce of each rank's S / m slice across the K domains over its NIC
    (2 ceil(log2 K) network hops, 2 (K - 1) / K x (S / m) / N), all-gather inside each domain."""
    S = np.asarray(S, dtype=float)
    m = max(n // domains, 1)
    inter = 2 * ceil(log2(domains)) * net_latency_us + 2 * (domains - 1) / domains * (S / m) / (nic_gbps * 1e3)
    if m == 1:
        return inter
    return rs_intra(S) + inter + ag_intra(S)


def alltoall_us(S: np.ndarray, n: int, domains: int, floor_us: float, intra_busbw: float, nic_gbps: float,
                net_latency_us: float) -> np.ndarray:
    """NCCL all-to-all (each rank sends S / n to every rank): the domain's floor plus one network hop, then the
    slower of the (m - 1) / n share over NVLink/PCIe and the (n - m) / n share over the rank's NIC."""
    S = np.asarray(S, dtype=float)
    m = max(n // domains, 1)
    inside = S * (m - 1) / n / (intra_busbw * 1e3)
    out = S * (n - m) / n / (nic_gbps * 1e3)
    return floor_us + net_latency_us + np.maximum(inside, out)


def p2p_us(S: np.ndarray, inside: Timer, floor_us: float, nic_gbps: float, net_latency_us: float) -> np.ndarray:
    """One send between fast domains (a PP stage boundary): the slower of the node's own measured send (`inside`:
    its floor and its protocols' small-message rates) and its floor plus S over the rank's NIC share (every rank of
    the stage sends at once), plus one network hop."""
    S = np.asarray(S, dtype=float)
    return np.maximum(inside(S), floor_us + S / (nic_gbps * 1e3)) + net_latency_us


# --- the profile side: measured terms of one fast domain --------------------------------------------------------


def domain_timer(hw: HardwareProfile, op: str, m: int, engine: str = "vllm") -> Timer:
    """Time of `op` on m GPUs of one fast domain: the node's own timer (`comm.collective_timer`, as on one box) up to
    its GPUs; beyond a node (an NVL72 rack's trays) NCCL over the NVSwitch domain's link, whatever trays the group
    spans (`nvswitch.nvswitch_us`: ring protocols and NVLS, parameters of the NVLink generation). Without fitted
    parameters for the domain's generation: the largest measured term at m ranks' bus factor, its floor growing by
    the measured intra step per extra ring step, on an NVSwitch by no more than NCCL's NVLS latency."""
    physics = "vllm" if engine == "trtllm" else engine
    if m <= hw.topology.num_gpus:
        return collective_timer(hw, op, m, engine=physics)
    gen = generation(hw)
    if gen is not None and op != "p2p":
        link = link_gbps(hw)
        return lambda S: nvswitch_us(op, S, m, gen, link)
    term = find_term(hw, op, m, "nccl") or find_term(hw, "allreduce", m, "nccl")
    assert term is not None  # the schema requires an NCCL allreduce term
    extra = (ring_steps(op, m) - ring_steps(op, term.gpus)) * intra_step_us(_floor(term), op, term.gpus)
    if hw.topology.nvswitch and op in ("allreduce", "allgather", "reducescatter"):
        extra = min(extra, NCCL_NVLS_US)
    timed = term_timer(term, op, m)
    return lambda S: timed(S) + extra


def _floor(term: CollectiveTerm) -> float:
    return float(term.measured_us[0]) if term.measured_us else float(term.small_latency_us)


def _term(hw: HardwareProfile, op: str, m: int) -> CollectiveTerm:
    term = find_term(hw, op, max(m, 2), "nccl") or find_term(hw, "allreduce", max(m, 2), "nccl")
    assert term is not None  # the schema requires an NCCL allreduce term
    return term


def domain_floor_busbw(hw: HardwareProfile, op: str, m: int) -> tuple[float, float]:
    """(floor us, large-message busbw GB/s) of the measured NCCL `op` term nearest m GPUs (allreduce if the profile
    has no such op); beyond the node in an NVSwitch domain with fitted parameters, the NVSwitch model's."""
    gen = generation(hw) if m > hw.topology.num_gpus and op != "p2p" else None
    if gen is not None:
        return nvswitch.floor_busbw(op, m, gen, link_gbps(hw))
    term = _term(hw, op, m)
    return _floor(term), float(term.large_busbw_gbps)


def ring_latency(hw: HardwareProfile, op: str, m: int) -> tuple[float, float]:
    """(base us, intra step us) of NCCL's ring model on this hardware: the measured floor of the op's term nearest m
    GPUs is base + its ring steps x step, base NCCL's 6.6 us (or the whole floor where it is lower); beyond the node
    in an NVSwitch domain with fitted parameters, the LL ring's base and step (`nvswitch.ring_latency`)."""
    gen = generation(hw) if m > hw.topology.num_gpus else None
    if gen is not None:
        return nvswitch.ring_latency(gen)
    term = _term(hw, op, m)
    floor = _floor(term)
    step = intra_step_us(floor, op, term.gpus)
    return floor - ring_steps(op, term.gpus) * step, step


def _span(cluster: Cluster, group: Span | int) -> Span:
    return group if isinstance(group, Span) else cluster.span_of(int(group))


def cluster_nic_gbps(cluster: Cluster) -> float:
    """NIC GB/s per GPU per direction on the cluster's fabric (0 without one)."""
    fab = cluster.fabric
    if fab is None:
        return 0.0
    return nic_gbps_per_gpu(fab.nics_per_node, fab.nic_gbps, cluster.gpus_per_node, fab.gpudirect_rdma)


def nccl_across_us(cluster: Cluster, op: str, S: np.ndarray, span: Span, engine: str = "vllm") -> np.ndarray:
    """An NCCL collective whose group crosses the fabric between fast domains (module docstring)."""
    fab = cluster.fabric
    if fab is None:
        raise AdvisorError(f"{cluster.node.id}: a group across {span.domains} fast domains needs a scale-out fabric")
    n, K, m = span.gpus, span.domains, span.per_domain
    nic, hop = cluster_nic_gbps(cluster), fab.latency_us
    hw = cluster.node
    if op == "p2p":
        floor, _ = domain_floor_busbw(hw, "p2p", 2)
        return p2p_us(S, domain_timer(hw, "p2p", 2, engine), floor, nic, hop)
    floor, busbw = domain_floor_busbw(hw, op, m)
    if op == "alltoall":
        return alltoall_us(S, n, K, floor, busbw, nic, hop)
    base, step = ring_latency(hw, op, m)
    ring = ring_us(op, S, n, K, step, busbw, nic, hop, base)
    if op != "allreduce":
        return ring
    two = two_level_allreduce_us(S, n, K, domain_timer(hw, "reducescatter", m, engine),
                                 domain_timer(hw, "allgather", m, engine), nic, hop)
    return np.minimum(ring, two)


def nccl_time_us(cluster: Cluster, op: str, S: np.ndarray, span: Span, engine: str = "vllm") -> np.ndarray:
    """Microseconds of one NCCL collective over `span`: the node's measured terms inside one fast domain
    (`comm.py`), the fabric across domains (`nccl_across_us`)."""
    if span.gpus <= 1:
        return np.zeros_like(S)
    if span.domains <= 1:
        return np.asarray(domain_timer(cluster.node, op, span.gpus, engine)(S), dtype=float)
    return nccl_across_us(cluster, op, S, span, engine)
