"""Pydantic schema of a hardware profile (`hwprofiles/<id>.toml`).

Units are in field names (`_bytes`, `_bytes_per_s`, `_flops_per_s`, `_us`, `_gbps` = GB/s = 1e9 B/s as
nccl-tests prints it). Every number has a sibling `<field>_source` string or a `source` field in its table.
Unknown keys are rejected (`extra="forbid"`), models are frozen.
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

DTYPES = ("bf16", "fp8", "fp4", "int4")
OPS = ("allreduce", "allgather", "reducescatter", "alltoall", "p2p")
# Path classes between two GPUs, best first; a group is as slow as its slowest pair ("slowest hop").
PATHS = ("nvlink", "same_switch", "same_socket", "cross_socket")
Path = Literal["nvlink", "same_switch", "same_socket", "cross_socket"]
Source = Field(min_length=3)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AltBandwidth(_Frozen):
    """A conflicting published memory bandwidth that was not chosen, kept for the record."""

    bytes_per_s: PositiveFloat
    source: str = Source
    why_not_chosen: str = Source


class GpuSpec(_Frozen):
    """One GPU: memory, bandwidth, dense tensor throughput per format."""

    name: str
    generation: str
    sm: str | None = None
    memory_bytes: PositiveInt
    memory_bytes_source: str = Source
    # What CUDA reports as the device's total (`cudaMemGetInfo`, torch `mem_get_info`): vLLM's budget is this
    # times gpu_memory_utilization. None: not known, `memory_bytes` is used.
    cuda_total_bytes: PositiveInt | None = None
    cuda_total_bytes_source: str | None = None
    mem_bw_bytes_per_s: PositiveFloat
    mem_bw_bytes_per_s_source: str = Source
    mem_bw_alternatives: list[AltBandwidth] = []
    mem_bw_choice: str | None = None
    bf16_dense_flops_per_s: PositiveFloat
    bf16_dense_flops_per_s_source: str = Source
    fp8_dense_flops_per_s: PositiveFloat | None = None
    fp8_dense_flops_per_s_source: str | None = None
    fp4_dense_flops_per_s: PositiveFloat | None = None
    fp4_dense_flops_per_s_source: str | None = None
    power_w: PositiveFloat
    power_w_source: str = Source
    # On-chip L2: a kernel benchmark that re-reads the same weights runs from it when they fit (`scripts/
    # kernel_l2.py`); a serving step, whose layers each read their own weights, does not. None: not known.
    l2_bytes: PositiveInt | None = None
    l2_bytes_source: str | None = None

    @model_validator(mode="after")
    def _sources_present(self) -> GpuSpec:
        for fmt in ("fp8", "fp4"):
            if getattr(self, f"{fmt}_dense_flops_per_s") is not None and not getattr(
                self, f"{fmt}_dense_flops_per_s_source"
            ):
                raise ValueError(f"{fmt}_dense_flops_per_s_source: missing (every number needs a source)")
        if self.l2_bytes is not None and not self.l2_bytes_source:
            raise ValueError("l2_bytes_source: missing (every number needs a source)")
        if self.cuda_total_bytes is not None and not self.cuda_total_bytes_source:
            raise ValueError("cuda_total_bytes_source: missing (every number needs a source)")
        if self.mem_bw_alternatives and not self.mem_bw_choice:
            raise ValueError("mem_bw_choice: required when mem_bw_alternatives lists conflicting values")
        return self

    @property
    def native_formats(self) -> list[str]:
        """Tensor-core formats with their own rate on this GPU (bf16 always; fp8/fp4 where listed)."""
        return ["bf16"] + [f for f in ("fp8", "fp4") if getattr(self, f"{f}_dense_flops_per_s") is not None]

    def dense_flops_per_s(self, dtype: str) -> float:
        """Dense rate the GEMMs of `dtype` weights actually run at.

        Native fp8/fp4 -> their tensor-core rate. Non-native formats run as weight-only kernels that
        dequantise to bf16 (vLLM Marlin W8A16 / W4A16, `layers/quantization/utils/marlin_utils*.py`), so
        the math is bf16: fp8 on A100 -> bf16 rate; int4 (W4A16 checkpoints, activations bf16) -> bf16 rate.
        """
        if dtype not in DTYPES:
            raise ValueError(f"dtype {dtype!r} not in {DTYPES}")
        rate = getattr(self, f"{dtype}_dense_flops_per_s", None) if dtype in ("fp8", "fp4") else None
        return float(rate if rate is not None else self.bf16_dense_flops_per_s)


class LinkSpec(_Frozen):
    """Measured/spec point-to-point rate of one path class (used when a group's slowest hop differs)."""

    path: Path
    p2p_bw_gbps: PositiveFloat
    latency_us: NonNegativeFloat
    source: str = Source


class Fabric(_Frozen):
    """A scale-out network joining nodes: `nics_per_node` NICs of `nic_gbps` each (GB/s per NIC per direction:
    400 Gb/s NDR = 50 GB/s), GPUDirect RDMA (NIC reads GPU memory) or staged through host memory, and the
    one-way latency of a small message between nodes. `advisor.hardware.cluster.Cluster` uses it."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    name: str
    kind: Literal["infiniband", "roce", "ethernet"]
    nics_per_node: PositiveInt
    nic_gbps: PositiveFloat
    gpudirect_rdma: bool
    latency_us: NonNegativeFloat
    source: str = Source

    @property
    def node_gbps(self) -> float:
        """GB/s one node can send (or receive) over all its NICs at once."""
        return self.nics_per_node * self.nic_gbps


class Topology(_Frozen):
    """GPUs of one node and how they connect. Lists hold GPU indices. `nvlink_domain_size` larger than
    `num_gpus` means the NVLink domain spans `rack_nodes` nodes (GB200/GB300 NVL72: 18 trays of 4)."""

    num_gpus: PositiveInt
    sockets: list[list[int]]
    pcie_switches: list[list[int]] = []
    nvlink_domains: list[list[int]] = []
    nvlink_domain_size: int = Field(0, ge=0)
    nvswitch: bool = False
    p2p: bool
    pcie_gen: PositiveInt
    pcie_lanes: PositiveInt = 16
    links: list[LinkSpec]
    rack_nodes: PositiveInt | None = None
    rack_nodes_source: str | None = None
    source: str = Source

    @model_validator(mode="after")
    def _indices_valid(self) -> Topology:
        n = self.num_gpus
        if self.rack_nodes is not None:
            if not self.rack_nodes_source:
                raise ValueError("rack_nodes_source: missing (every number needs a source)")
            if self.rack_nodes * n != self.nvlink_domain_size:
                raise ValueError(f"rack_nodes: {self.rack_nodes} nodes x {n} GPUs is not the NVLink domain's "
                                 f"{self.nvlink_domain_size}")
        for name in ("sockets", "pcie_switches", "nvlink_domains"):
            seen: set[int] = set()
            for group in getattr(self, name):
                for g in group:
                    if not 0 <= g < n:
                        raise ValueError(f"{name}: GPU index {g} outside 0..{n - 1}")
                    if g in seen:
                        raise ValueError(f"{name}: GPU {g} listed twice")
                    seen.add(g)
            if name == "sockets" and seen != set(range(n)):
                raise ValueError(f"sockets: must cover every GPU 0..{n - 1}")
        return self


class CollectiveTerm(_Frozen):
    """Time of one collective on `gpus` GPUs: two regimes split at `switch_bytes` (nccl-tests size S).

    t(S) = latency_us + S * f / (busbw_gbps * 1e3)   with f the nccl-tests bus factor
    (allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; p2p 1).
    `small_*` applies for S < switch_bytes (LL/tree/one-shot regime), `large_*` above (ring/two-shot).
    `measured_bytes` / `measured_us`, when given, are the measured curve itself (median per size): inside
    their range the time follows it (a power law between neighbouring sizes), because algorithm changes
    (e.g. vLLM's one-shot -> two-shot custom allreduce) put bumps in it that two straight lines cannot follow.
    """

    op: Literal["allreduce", "allgather", "reducescatter", "alltoall", "p2p"]
    backend: Literal["nccl", "vllm_custom", "sglang_custom"] = "nccl"
    gpus: int = Field(ge=2)
    path: Path
    small_latency_us: NonNegativeFloat
    small_busbw_gbps: PositiveFloat
    switch_bytes: float = Field(ge=0)
    large_latency_us: NonNegativeFloat
    large_busbw_gbps: PositiveFloat
    points: int = Field(0, ge=0)
    median_abs_err_pct: NonNegativeFloat | None = None
    p90_abs_err_pct: NonNegativeFloat | None = None
    measured_bytes: tuple[PositiveFloat, ...] = ()
    measured_us: tuple[PositiveFloat, ...] = ()
    source: str = Source

    @model_validator(mode="after")
    def _curve(self) -> CollectiveTerm:
        b = self.measured_bytes
        if len(b) != len(self.measured_us):
            raise ValueError("measured_bytes and measured_us must have the same length")
        if any(x >= y for x, y in zip(b, b[1:], strict=False)):
            raise ValueError("measured_bytes must be strictly increasing")
        return self


class HardwareProfile(_Frozen):
    """One node: GPU spec, topology and collective terms, and the scale-out fabrics that can join several of
    it (`fabrics`, the first the default; `advisor.hardware.cluster`)."""

    id: str
    name: str
    interconnect_class: Literal["pcie", "nvlink", "xgmi"]
    aic_system: str | None = None
    notes: str | None = None
    gpu: GpuSpec
    topology: Topology
    collectives: list[CollectiveTerm]
    fabrics: list[Fabric] = []

    @model_validator(mode="after")
    def _allreduce_present(self) -> HardwareProfile:
        if not any(c.op == "allreduce" and c.backend == "nccl" for c in self.collectives):
            raise ValueError("collectives: needs at least one NCCL allreduce term")
        ids = [f.id for f in self.fabrics]
        if len(set(ids)) != len(ids):
            raise ValueError(f"fabrics: ids must be unique ({', '.join(ids)})")
        return self
