"""Wide-EP dispatch and combine on a `Cluster`: the backend the engine runs (`a2a_backends.py`) over the links the
EP group crosses, timed by `wide_ep.py` (DeepEP, pplx, TensorRT-LLM's NVLink all-to-all) or as NCCL collectives
(`scaleout.py`: all-gather + reduce-scatter, naive broadcast + all-reduce).

The message `S` is what one rank sends in DeepEP's terms, T x topk x hidden x bytes per element (dispatch FP8 with
a scale per 128 elements, 1 + 4/128 bytes, unless `elem_bytes` says otherwise; combine BF16, 2), so T = S /
(topk hidden bytes). All-gather + reduce-scatter moves every rank's T tokens to every rank instead: all-gather of
R x T x hidden x bytes, reduce-scatter of R x T x hidden x 2 (vLLM `AgRsAll2AllManager`); naive broadcasts each
rank's T x hidden x bytes in turn (R broadcasts, each an all-gather of R / (R - 1) times the message's bandwidth
time) and all-reduces the R x T x hidden x 2 outputs (vLLM `NaiveAll2AllManager`).
"""

from __future__ import annotations

import numpy as np

from advisor.errors import AdvisorError
from advisor.hardware.a2a_backends import BACKENDS, ENGINE_NAMES, Fabric, default_backend, resolve_phase, unusable
from advisor.hardware.cluster import Cluster, Span
from advisor.hardware.scaleout import domain_floor_busbw, nccl_time_us
from advisor.hardware.wide_ep import (
    DEVICE_SMS,
    FP8_SCALE_BYTES,
    MIN_DEVICE_SMS,
    EPLinks,
    MoEShape,
    ll_us,
    normal_us,
    one_sided_us,
)


def ep_links(cluster: Cluster, span: Span) -> EPLinks:
    """The plain link parameters of an EP group on the cluster: the node's fastest GPU-to-GPU link, the measured
    all-gather / all-to-all floors of one fast domain's ranks (at most a node's), the NIC line rate per GPU and
    the fabric's hop latency."""
    hw = cluster.node
    m = min(span.per_domain, hw.topology.num_gpus)
    fast = max(lk.p2p_bw_gbps for lk in hw.topology.links)
    ag, _ = domain_floor_busbw(hw, "allgather", m)
    a2a, _ = domain_floor_busbw(hw, "alltoall", m)
    fab = cluster.fabric
    nic = fab.nics_per_node * fab.nic_gbps / cluster.gpus_per_node if fab is not None else 0.0
    return EPLinks(ranks=span.gpus, per_domain=span.per_domain, fast_gbps=fast, ag_floor_us=ag, a2a_floor_us=a2a,
                   nic_gbps=nic, net_latency_us=fab.latency_us if fab is not None else 0.0,
                   device_sms=DEVICE_SMS.get(hw.gpu.sm or "", MIN_DEVICE_SMS))


def ep_fabric(cluster: Cluster, span: Span) -> Fabric:
    """What the EP group crosses, for the backends' requirements."""
    fab = cluster.fabric
    return Fabric(nvlink=cluster.node.interconnect_class == "nvlink", crosses_nics=span.domains > 1,
                  rdma=fab is not None and fab.kind in ("infiniband", "roce"),
                  gpudirect=fab is not None and fab.gpudirect_rdma)


def pick_backend(cluster: Cluster, span: Span, engine: str, backend: str | None) -> tuple[str, str]:
    """(backend, reason): `backend` by this module's name or the engine's own (`deepep` alone: normal for prefill,
    low-latency for decode, as SGLang's auto mode and vLLM's docs pair them), else the engine's default."""
    fab = ep_fabric(cluster, span)
    if backend is None or (backend not in BACKENDS and backend != "deepep"):
        return default_backend(engine, fab, backend)
    name = "deepep_auto" if backend == "deepep" else backend
    why = unusable(name, fab)
    if why:
        raise AdvisorError(why)
    return name, f"{BACKENDS[name][0]} (as asked)"


def exchange_us(cluster: Cluster, direction: str, nbytes: np.ndarray, span: Span, engine: str = "vllm",
                backend: str | None = None, *, moe: MoEShape | tuple[int, int, int] | None = None,
                phase: str = "decode",
                busiest: np.ndarray | float = 1.0, elem_bytes: float | None = None) -> np.ndarray:
    """Microseconds of one dispatch or combine (module docstring), vectorised over `nbytes`; `moe` a `MoEShape` or
    (hidden, topk, experts)."""
    if direction not in ("dispatch", "combine"):
        raise AdvisorError(f"EP exchange {direction!r}: expected dispatch or combine")
    if moe is None:
        raise AdvisorError("dispatch/combine timing needs the MoE shape (hidden, topk, experts)")
    if engine not in ENGINE_NAMES:
        raise AdvisorError(f"--engine {engine}: expected one of {', '.join(ENGINE_NAMES)}")
    if not isinstance(moe, MoEShape):
        moe = MoEShape(*moe)
    name = resolve_phase(pick_backend(cluster, span, engine, backend)[0], phase)
    b = elem_bytes if elem_bytes is not None else (1 + FP8_SCALE_BYTES if direction == "dispatch" else 2.0)
    S = np.asarray(nbytes, dtype=float)
    T = S / (moe.topk * moe.hidden * b)
    R = span.gpus
    if name == "agrs":
        if direction == "dispatch":
            return nccl_time_us(cluster, "allgather", R * T * moe.hidden * b, span, engine)
        return nccl_time_us(cluster, "reducescatter", R * T * moe.hidden * 2.0, span, engine)
    if name == "naive":
        if direction == "dispatch":
            return R * nccl_time_us(cluster, "allgather", T * moe.hidden * b * R / (R - 1), span, engine)
        return nccl_time_us(cluster, "allreduce", R * T * moe.hidden * 2.0, span, engine)
    links = ep_links(cluster, span)
    if name in ("deepep_ll", "pplx"):
        return ll_us(direction, T, moe, links, busiest)
    if name == "deepep_normal":
        return normal_us(direction, T, moe, links, busiest)
    return one_sided_us(direction, T, moe, links, busiest, b)
