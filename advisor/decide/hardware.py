"""What `advisor hw list` and `hw show` say of the hardware profiles: one row per shipped profile, and one profile
with its natively supported formats and (with --gpus N) which N GPUs a plan would get and how vLLM would run its
decode allreduce there. Typed results; `report/hw_tables.py` renders them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializationInfo, model_serializer

from advisor.hardware import HardwareProfile

# the decode allreduce `hw show --gpus` describes: one token's BF16 hidden state of width 7168 (DeepSeek-V3 and
# Kimi-K2's hidden_size), 2 bytes each; the backend is chosen by size (`hardware/comm.py: allreduce_backend_reason`)
DECODE_ALLREDUCE_BYTES = 2 * 7168


class HardwareRow(BaseModel):
    """One profile of `hw list`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    gpus: int
    memory_bytes: int
    mem_bw_bytes_per_s: float
    bf16_dense_flops_per_s: float
    native_formats: list[str]
    interconnect_class: str


class Placement(BaseModel):
    """`hw show --gpus N`: the GPUs picked (`hardware/placement.py: pick_gpus`), their slowest hop, and vLLM's
    decode allreduce backend there with the reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int
    gpus: list[int]
    slowest_hop: str | None
    vllm_allreduce_backend_decode: str
    vllm_allreduce_reason: str


class ClusterView(BaseModel):
    """`hw show --nodes N`: what the cluster is (`hardware/cluster.py: Cluster.describe`) and its links
    (`Cluster.links`: inside a node, across an NVL72 rack's trays, over the fabric between fast domains)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: int
    gpus: int
    fast_domain_gpus: int
    fabric: str | None
    summary: str
    links: list[dict[str, Any]]


class ProfileView(BaseModel):
    """`hw show`: the profile; in JSON its own fields, then `native_formats`, then `placement` when asked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: HardwareProfile
    placement: Placement | None = None
    cluster: ClusterView | None = None  # with --nodes: the cluster and the links its collectives cross

    @model_serializer(mode="plain")
    def _flat(self, info: SerializationInfo) -> dict[str, Any]:
        doc: dict[str, Any] = self.profile.model_dump(mode=info.mode)
        doc["native_formats"] = self.profile.gpu.native_formats
        if self.placement is not None:
            doc["placement"] = self.placement.model_dump(mode=info.mode)
        if self.cluster is not None:
            doc["cluster"] = self.cluster.model_dump(mode=info.mode)
        return doc


def list_profiles() -> list[HardwareRow]:
    """Every shipped profile, in id order."""
    from advisor.hardware import known_ids, load_profile

    rows = []
    for hid in known_ids():
        hw = load_profile(hid)
        rows.append(HardwareRow(id=hw.id, name=hw.name, gpus=hw.topology.num_gpus, memory_bytes=hw.gpu.memory_bytes,
                                mem_bw_bytes_per_s=hw.gpu.mem_bw_bytes_per_s,
                                bf16_dense_flops_per_s=hw.gpu.bf16_dense_flops_per_s,
                                native_formats=hw.gpu.native_formats, interconnect_class=hw.interconnect_class))
    return rows


def show_profile(ref: str, gpus: int | None = None, nodes: int | None = None, fabric: str | None = None
                 ) -> ProfileView:
    """One profile (id or path), with the placement of `gpus` GPUs when given, and with `nodes` the cluster of that
    many nodes over `fabric` (one line for bad input: `hardware/cluster.py: load_cluster`)."""
    from advisor.hardware import load_profile
    from advisor.hardware.cluster import load_cluster

    hw = load_profile(ref)
    view = None
    if nodes is not None or fabric is not None:
        c = load_cluster(hw, nodes or 1, fabric)
        view = ClusterView(nodes=c.nodes, gpus=c.gpus, fast_domain_gpus=c.fast_domain_gpus,
                           fabric=c.fabric.id if c.fabric else None, summary=c.describe(), links=c.links())
    return ProfileView(profile=hw, placement=None if gpus is None else placement(hw, gpus), cluster=view)


def placement(hw: HardwareProfile, n: int) -> Placement:
    from advisor.hardware.comm import allreduce_backend_reason
    from advisor.hardware.placement import group_path, pick_gpus

    gpus = pick_gpus(hw, n)
    backend, why = allreduce_backend_reason(hw, n, DECODE_ALLREDUCE_BYTES, "vllm")
    return Placement(n=n, gpus=gpus, slowest_hop=group_path(hw.topology, gpus), vllm_allreduce_backend_decode=backend,
                     vllm_allreduce_reason=why)
