"""Collective time on a cluster: inside one fast domain the node's measured terms (`hardware/comm.py`, as on one
box), across fast domains the scale-out fabric by the hierarchical estimate below. The one entry point the step
model uses is `cluster_comm_fn` (`cost/step.py: comm_fn`).

Hierarchical estimate (NCCL's own model of a multi-node collective, `src/graph/tuning.cc: ncclTopoTuneModel`:
`nsteps - nInterSteps` intra-node steps plus `nInterSteps` network steps, each paying its hardware latency):
a group of n ranks over k fast domains, m = n / k per domain; the intra-domain part is the node's measured
collective on min(m, GPUs per node) GPUs, the inter-domain part moves each rank's share over its share of the
node's NICs:
- allreduce: 2 (k - 1) / k x S / B + 2 (k - 1) x L      (B = node NIC GB/s, L = fabric latency per hop)
- allgather, reduce-scatter: (k - 1) / k x S / B + (k - 1) x L
- all-to-all (DeepEP dispatch/combine, S = what one rank sends): (k - 1) / k of it leaves the domain, every rank
  of a node at once over the node's NICs: m_node x S (k - 1) / k / B + L (the share inside the domain moves over
  NVLink/PCIe at the same time and is the shorter)
- p2p (a PP send of S bytes between stages): S / B + L.
Without GPUDirect RDMA the bytes are staged through host memory and cross PCIe twice more; the estimate keeps the
NIC rate (the smaller of the two on every listed box) and says so.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from advisor.hardware.cluster import Cluster
from advisor.hardware.comm import find_term, term_time_us

Comm = Callable[..., np.ndarray]


def _inside(cluster: Cluster, node_comm: Comm, op: str, S: np.ndarray, n: int) -> np.ndarray:
    """Seconds of a collective inside one fast domain: the node's own timer up to its GPUs; beyond a node (an
    NVL72 rack's trays) the largest measured term of the profile at the group's bus factor."""
    if n <= cluster.gpus_per_node:
        return node_comm(op, S, n)
    term = find_term(cluster.node, op, n, "nccl") or find_term(cluster.node, "allreduce", n, "nccl")
    assert term is not None  # every profile has an NCCL allreduce term (schema)
    return term_time_us(term, S, op, n) * 1e-6


def fabric_time_s(cluster: Cluster, op: str, S: np.ndarray, n: int, domains: int) -> np.ndarray:
    """Seconds of the inter-domain part of a collective of S bytes over n ranks in `domains` fast domains (module
    docstring)."""
    fab = cluster.fabric
    if fab is None:  # nodes of one NVLink domain: no NIC is crossed
        return np.zeros_like(S)
    k = domains
    bw = fab.node_gbps * 1e9
    lat = fab.latency_us * 1e-6
    if op == "allreduce":
        return 2 * (k - 1) / k * S / bw + 2 * (k - 1) * lat
    if op in ("allgather", "reducescatter"):
        return (k - 1) / k * S / bw + (k - 1) * lat
    if op == "alltoall":
        per_node = min(max(n // k, 1), cluster.gpus_per_node)
        return per_node * S * (k - 1) / k / bw + lat
    return S / bw + lat  # p2p


def cluster_comm_fn(cluster: Cluster, engine: str, node_comm: Comm) -> Comm:
    """The step model's collective timer on `cluster`: (op, bytes, group size[, fast domains, backend, MoE shape])
    -> seconds; a group inside one fast domain is timed as on one node (`node_comm`). `op` "dispatch"/"combine" is
    an expert all-to-all (DeepEP's, `backend`), what one rank sends, of a MoE of shape (hidden, top-k, experts)."""

    def f(op: str, nbytes: np.ndarray, n: int, domains: int = 1, backend: str | None = None,
          moe: tuple[int, int, int] | None = None) -> np.ndarray:
        S = np.asarray(nbytes, dtype=float)
        if op in ("dispatch", "combine"):
            op = "alltoall"
        if domains <= 1:
            return _inside(cluster, node_comm, op, S, n)
        m = max(n // domains, 1)
        # all-to-all: the NVLink/PCIe share inside a domain runs beside the NIC share and is the shorter
        intra = _inside(cluster, node_comm, op, S, m) if m > 1 and op not in ("p2p", "alltoall") else 0.0
        return intra + fabric_time_s(cluster, op, S, n, domains)

    return f
