"""The few efficiency terms of the cost model, with their priors and sources.

Each is physical: a fraction of a spec-sheet rate, or a fixed time. `advisor calibrate` fits them per
(hardware, engine) within `BOUNDS`; until then the priors below are used and results say
`calibrated: none`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Terms(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mem_bw_eff: float = Field(0.8, gt=0, le=1)
    """Achieved / peak DRAM bandwidth in decode kernels. Prior 0.8: NVIDIA's AIConfigurator applies
    `mem_bw_empirical_scaling_factor: 0.8` to every GPU (aiconfigurator `systems/*.yaml`)."""

    flops_eff: float = Field(0.5, gt=0, le=1)
    """Achieved / peak dense tensor FLOP/s in prefill GEMMs. Prior 0.5: uncalibrated guess (no public
    measurement found); replaced by the fitted value."""

    layer_overhead_us: float = Field(10.0, ge=0)
    """Fixed time per decoder layer per step (kernel boundaries, norms, rope, routing, small GEMM
    inefficiency) beyond the roofline. Prior 10 us: about 3-4 kernel launches of ~3 us under CUDA
    graphs; uncalibrated guess."""

    step_overhead_us: float = Field(500.0, ge=0)
    """Fixed time per engine step (scheduler, sampler, input prep). Prior 0.5 ms: uncalibrated guess."""

    request_overhead_us: float = Field(20_000.0, ge=0)
    """Fixed latency each request pays before its first token beyond the forward passes (HTTP/API server,
    tokenization, admission into the running batch, first-token detokenization). Prior 20 ms: uncalibrated
    guess; it is what TTFT keeps when the prefill compute is tiny."""

    prefill_queue_frac: float = Field(0.5, ge=0, le=1)
    """Share of the other running requests whose prefill a new request waits behind: 0 = arrivals fully
    staggered, 1 = synchronized waves (closed-loop benchmark clients start all users at once and equal
    lengths keep them in step); mean wait frac * (n - 1) / 2 prefills. Prior 0.5: midpoint."""

    comm_latency_scale: float = Field(1.0, ge=0.5, le=4)
    """Multiplier on the profile's measured collective times (nccl-tests run one collective in a loop;
    inside a forward, with compute between calls, the floor can be higher: 36-45 us measured inside
    engines on 8x PCIe vs ~25 us in nccl-tests: SGLang PR #32479, local-inference-lab/b12x PR #139).
    Prior 1: the measured table as is."""


BOUNDS: dict[str, tuple[float, float]] = {
    "mem_bw_eff": (0.3, 1.0),
    "flops_eff": (0.1, 1.0),
    "layer_overhead_us": (0.0, 500.0),
    "step_overhead_us": (0.0, 20_000.0),
    "comm_latency_scale": (0.5, 4.0),
    "request_overhead_us": (0.0, 2_000_000.0),
    "prefill_queue_frac": (0.0, 1.0),
}
