"""The step-level terms of the cost model: what the kernel models (`cost/kernels.py`, fitted to measured
kernels) do not explain, with their priors and bounds.

Each is physical: a scale on the kernels' spec-sheet fractions, or a fixed time. `advisor calibrate` fits them
per engine, pooled across hardware (`calibrate/pooled.py`); the priors below are what a result uses
without a calibration, and it says so (`calibrated`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Terms(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    bw_scale: float = Field(1.0, gt=0)
    """Scale on the kernels' achieved DRAM bandwidth inside a serving step (CUDA-graph replay, L2 shared
    between kernels, the engine's own kernel choices). Prior 1: the kernel tables as measured."""

    layer_overhead_us: float = Field(20.0, ge=0)
    """Fixed time per decoder layer per step beyond the modelled kernels (norms, rotary embedding, residual
    adds, the activation quantization no producer kernel fuses, e.g. before o_proj, router top-k: ~6-8 small kernels
    of 2-3 us under CUDA graphs).
    Prior 20 us: that count times the measured per-launch floor of the kernel tables (GEMM t0 ~3 us)."""

    step_overhead_us: float = Field(500.0, ge=0)
    """Fixed time per engine step (scheduler, sampler, input preparation, host gaps). Prior 0.5 ms: guess."""

    request_overhead_us: float = Field(20_000.0, ge=0)
    """Fixed latency each request pays before its first token beyond the forward passes (HTTP/API server,
    tokenization, admission, first-token detokenization). Prior 20 ms: guess; TTFT keeps it when the prefill
    is tiny."""

    bench_wave_share: float = Field(0.5, ge=0, le=1)
    """Of a measured benchmark, not of the engine: the share of its requests served in synchronized waves. A
    closed-loop client (`vllm bench serve --max-concurrency`, genai-perf) releases every user at once, and
    with equal lengths they finish together and come back together, so prompts keep arriving in bursts
    (`cost/serving.py: _first_round`) rather than staggered. Predictions for a deployment use the staggered
    steady state (share 0). Prior 0.5: no knowledge either way; fitted per engine. Rows with equal lengths
    under a prefill-first scheduler are waves throughout (`cost/serving.py: wave_share`) and do not use it."""

    comm_latency_scale: float = Field(1.0, gt=0)
    """Multiplier on the profile's measured collective times (nccl-tests run one collective in a loop;
    inside a forward, with compute between calls, the floor can differ: 36-45 us measured inside engines on
    8x PCIe vs ~25 us in nccl-tests, SGLang PR #32479, local-inference-lab/b12x PR #139). Prior 1; bounded by
    that evidence (`BOUNDS`). It scales the whole time, bandwidth part included: scaling only the floor, or
    adding a fitted wait per call instead, transferred worse to a GPU held out (README, Calibration)."""


BOUNDS: dict[str, tuple[float, float]] = {
    "bw_scale": (0.5, 1.5),
    "layer_overhead_us": (0.0, 500.0),
    "step_overhead_us": (0.0, 20_000.0),
    "request_overhead_us": (0.0, 2_000_000.0),
    # at most the largest in-engine / nccl-tests ratio the sources above measure (45 / 25 us): fitted freely it
    # reached 2.1-2.7 (SGLang on B200/B300, TensorRT-LLM on GB200), taking up time no collective spends, and
    # a model held out inherited it (H100 SGLang TTFT 19% -> 10% held out once bounded)
    "comm_latency_scale": (0.5, 1.8),
    "bench_wave_share": (0.0, 1.0),
}
AT_BOUND = 1e-3  # share of a term's range within which a fitted value counts as pushed onto its bound


def at_bound(name: str, value: float) -> bool:
    """Whether a fitted term sits on a bound of `BOUNDS` (within AT_BOUND of its range): what a fit reports as
    `bounds_hit`. At 1% of the range, TensorRT-LLM's fitted per-layer time (6 us of 0-500) and a per-request
    time of 19 ms (of 0-2,000) would have counted as pushed to zero."""
    lo, hi = BOUNDS[name]
    return min(value - lo, hi - value) <= AT_BOUND * (hi - lo)
