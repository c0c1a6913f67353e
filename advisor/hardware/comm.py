"""Collective cost functions: time of a collective of S bytes over n GPUs placed on a node.

Model (per term, fitted or analogue, see the profile's `source`): two regimes split at `switch_bytes`,
each `latency_us + S * bus_factor / busbw` (nccl-tests bus-bandwidth convention,
nccl-tests `doc/PERFORMANCE.md`). Which backend runs an allreduce follows the engine's dispatch
in vLLM `vllm/distributed/device_communicators/cuda_communicator.py:all_reduce`,
`custom_all_reduce.py:CustomAllreduce.__init__/should_custom_ar`, `all_reduce_utils.py` size tables.
A group is as slow as its slowest hop: if the group's worst path (e.g. cross_socket) is worse than the
path the term was measured on, bandwidth is scaled by the ratio of the two links' P2P rates and the
extra per-hop latency is paid once per ring step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import numpy as np

from advisor.errors import AdvisorError
from advisor.hardware.placement import group_path, pick_gpus
from advisor.hardware.schema import OPS, CollectiveTerm, HardwareProfile, LinkSpec

ENGINES = ("vllm", "sglang", "nccl")
MiB = 1024 * 1024
# vLLM CustomAllreduce(max_size=8192 * 1024) default (custom_all_reduce.py); SGLang uses the same default.
CUSTOM_AR_DEFAULT_MAX_BYTES = 8 * MiB
# vllm/distributed/device_communicators/all_reduce_utils.py: CUSTOM_ALL_REDUCE_MAX_SIZES (applies when
# torch symm-mem is enabled, VLLM_ALLREDUCE_USE_SYMM_MEM=1 by default) and SYMM_MEM_ALL_REDUCE_MAX_SIZES.
VLLM_CUSTOM_AR_MAX_BYTES = {
    "sm90": {2: 64 * MiB, 4: 32 * MiB, 6: MiB // 2, 8: MiB // 4},
    "sm100": {2: 2 * MiB, 4: 2 * MiB, 6: 1 * MiB, 8: 1 * MiB},
    "sm103": {2: 4 * MiB, 4: 4 * MiB, 6: 8 * MiB, 8: 4 * MiB},
}
VLLM_SYMM_MEM_MAX_BYTES = {
    "sm90": {2: 64 * MiB, 4: 32 * MiB, 6: 64 * MiB, 8: 64 * MiB},
    "sm100": {2: 8 * MiB, 4: 32 * MiB, 6: 128 * MiB, 8: 128 * MiB},
    "sm103": {2: 4 * MiB, 4: 32 * MiB, 6: 32 * MiB, 8: 64 * MiB},
}
# custom_all_reduce.py: CustomAllreduce._SUPPORTED_WORLD_SIZES
CUSTOM_AR_WORLD_SIZES = (2, 4, 6, 8)


def bus_factor(op: str, n: int) -> float:
    """nccl-tests busbw/algbw factor: allreduce 2(n-1)/n; allgather/reducescatter/alltoall (n-1)/n; p2p 1."""
    if op == "p2p":
        return 1.0
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    return (n - 1) / n


def ring_steps(op: str, n: int) -> int:
    """Link traversals in series: ring allreduce 2(n-1), other ring collectives n-1, p2p 1."""
    return 1 if op == "p2p" else (2 * (n - 1) if op == "allreduce" else n - 1)


def two_regime_us(
    S: np.ndarray, f: float, lat_s: float, bw_s: float, split: float, lat_l: float, bw_l: float
) -> np.ndarray:
    """t = lat + S*f/(busbw*1e3) [us, GB/s], small regime below `split` bytes, large regime above."""
    return np.where(S < split, lat_s + S * (f / (bw_s * 1e3)), lat_l + S * (f / (bw_l * 1e3)))


def find_term(hw: HardwareProfile, op: str, n: int, backend: str = "nccl") -> CollectiveTerm | None:
    """Term for (op, backend) at group size n; unmeasured n uses the nearest larger measured size
    (an upper bound), else the largest."""
    terms = [c for c in hw.collectives if c.op == op and c.backend == backend]
    if op == "p2p":
        n = 2
    if not terms:
        return None
    larger = [c for c in terms if c.gpus >= n]
    return min(larger, key=lambda c: c.gpus) if larger else max(terms, key=lambda c: c.gpus)


def term_time_us(term: CollectiveTerm, S: np.ndarray, op: str, n: int, curve: bool = True) -> np.ndarray:
    """A term's time at sizes S on its own measured path: the measured curve up to its largest size, the two
    fitted regimes beyond it (everywhere when `curve` is off or the term has no curve)."""
    return term_timer(term, op, n, curve)(S)


def term_timer(term: CollectiveTerm, op: str, n: int, curve: bool = True
               ) -> Callable[[float | np.ndarray], np.ndarray]:
    """`term_time_us` as a function of the sizes, the term's constants resolved once (a sweep times each
    (op, group size) at every step)."""
    f = bus_factor(op, n)

    def regimes(s: np.ndarray) -> np.ndarray:
        return two_regime_us(s, f, term.small_latency_us, term.small_busbw_gbps, term.switch_bytes,
                             term.large_latency_us, term.large_busbw_gbps)

    if not curve or not term.measured_bytes:
        return lambda S: regimes(np.asarray(S, dtype=float))
    xs, ys = _log_curve(tuple(term.measured_bytes), tuple(term.measured_us))
    last = term.measured_bytes[-1]

    def timed(S: float | np.ndarray) -> np.ndarray:
        S = np.asarray(S, dtype=float)
        t = _on_log_curve(xs, ys, S)
        beyond = S > last
        if beyond.any():  # decode-sized messages rarely leave the measured range: the regimes only where they do
            t = np.where(beyond, regimes(S), t)
        return t

    return timed


def _placed_timer(hw: HardwareProfile, term: CollectiveTerm, op: str, n: int, path: str | None,
                  curve: bool = True) -> Callable[[float | np.ndarray], np.ndarray]:
    """A term's time (`term_timer`) plus what a slower placement than the measured one adds: its extra latency
    per link traversal and its lower bandwidth, on top of the measured time; resolved once per term."""
    timed = term_timer(term, op, n, curve)
    if path is None or path == term.path:
        return timed
    links: dict[str, LinkSpec] = {lk.path: lk for lk in hw.topology.links}
    have, want = links.get(term.path), links.get(path)
    if have is None or want is None:
        return timed
    scale = min(1.0, want.p2p_bw_gbps / have.p2p_bw_gbps)
    dlat = max(0.0, want.latency_us - have.latency_us) * ring_steps(op, n)
    if scale == 1.0 and dlat == 0.0:
        return timed
    f = bus_factor(op, n)

    def regimes(S: np.ndarray, dl: float, sc: float) -> np.ndarray:
        return two_regime_us(S, f, term.small_latency_us + dl, term.small_busbw_gbps * sc,
                             term.switch_bytes, term.large_latency_us + dl, term.large_busbw_gbps * sc)

    def placed(S: float | np.ndarray) -> np.ndarray:
        S = np.asarray(S, dtype=float)
        return timed(S) + (regimes(S, dlat, scale) - regimes(S, 0.0, 1.0))

    return placed


def _on_log_curve(log_sizes: np.ndarray, log_times: np.ndarray, S: np.ndarray) -> np.ndarray:
    """A measured curve (its ascending log sizes and log times, `_log_curve`) at sizes S: a power law between
    neighbouring measured sizes (linear in log t vs log S: exact for a flat latency floor and for t proportional to
    S), the smallest size's time below them (the latency floor). Meaningful for S up to the largest size."""
    return np.exp(np.interp(np.log(np.maximum(S, 1.0)), log_sizes, log_times))


@cache
def _log_curve(sizes: tuple[float, ...], times_us: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A measured curve's log sizes and log times (terms are shared by every timer of a profile)."""
    return np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(times_us, dtype=float))


def custom_allreduce_limit(hw: HardwareProfile, gpus: Sequence[int], engine: str) -> tuple[float, str]:
    """(max bytes for the in-engine allreduce, reason). 0 means the engine uses NCCL for every size."""
    n, topo = len(gpus), hw.topology
    if engine == "nccl":
        return 0.0, "engine=nccl: plain NCCL as nccl-tests runs it"
    if n not in CUSTOM_AR_WORLD_SIZES:
        return 0.0, f"custom allreduce supports world sizes {CUSTOM_AR_WORLD_SIZES} only; {n} -> NCCL"
    fully = group_path(topo, gpus) == "nvlink"
    if n > 2 and not fully:
        return 0.0, (
            f"custom allreduce is disabled on more than two PCIe-only GPUs ({n} GPUs not fully "
            "NVLink/xGMI-connected; custom_all_reduce.py) -> NCCL for every size"
        )
    if not fully and not topo.p2p:
        return 0.0, "2 PCIe GPUs without P2P (gpu_p2p_access_check fails) -> NCCL"
    sm = hw.gpu.sm or ""
    if engine == "vllm" and sm in VLLM_CUSTOM_AR_MAX_BYTES:
        custom = VLLM_CUSTOM_AR_MAX_BYTES[sm].get(n, CUSTOM_AR_DEFAULT_MAX_BYTES)
        symm = VLLM_SYMM_MEM_MAX_BYTES[sm].get(n, 0) if (fully and topo.nvswitch) else 0
        limit = float(max(custom, symm))
        how = f"custom AR < {custom / MiB:g} MiB" + (f", torch symm-mem < {symm / MiB:g} MiB" if symm else "")
        return (
            limit,
            f"{engine} in-engine allreduce on {n} {'NVLink' if fully else 'P2P'} GPUs ({how}; "
            "all_reduce_utils.py), NCCL above",
        )
    link = "NVLink/xGMI" if fully else "PCIe P2P"
    return float(CUSTOM_AR_DEFAULT_MAX_BYTES), (
        f"{engine} custom allreduce on {n} {link} GPUs for messages "
        f"< 8 MiB (custom_all_reduce.py max_size), NCCL above"
    )


# TensorRT-LLM's in-engine allreduce workspace: 16 MB on two GPUs, 8 MB above (`cpp/tensorrt_llm/common/
# customAllReduceUtils.h: getMaxRequiredWorkspaceSize` at NVIDIA/TensorRT-LLM@005b299b; later revisions allow
# 64 MiB), and its SM100 strategy table turns to NCCL at the same sizes (hidden 8192: from 512 tokens at TP8,
# 1024 at TP2); larger messages go to NCCL.
TRTLLM_AR_MAX_BYTES = {2: 16e6}
TRTLLM_AR_DEFAULT_MAX_BYTES = 8e6


def link_allreduce_us(S: np.ndarray, n: int, latency_us: float, link_gbps: float) -> np.ndarray:
    """An in-engine allreduce of S bytes over n NVLink GPUs at the link's rate, the faster of one-shot (every
    GPU reads the n - 1 peers' S bytes: lat + (n - 1) S / link) and two-shot (reduce-scatter then all-gather,
    two phases: 2 lat + 2 (n - 1) / n S / link). TensorRT-LLM's AUTO strategy picks between them per size from
    the fastest it measured (`customAllReduceUtils.h: AllReduceBestStrategyTableSM100`/`SM90`)."""
    S = np.asarray(S, dtype=float)
    one = latency_us + S * (n - 1) / (link_gbps * 1e3)
    two = 2 * latency_us + 2 * S * (n - 1) / n / (link_gbps * 1e3)
    return np.minimum(one, two)


def trtllm_allreduce_timer(hw: HardwareProfile, n_gpus: int) -> Callable[[float | np.ndarray], np.ndarray]:
    """TensorRT-LLM's allreduce (`tensorrt_llm/_torch/distributed/ops.py: AllReduce`, strategy AUTO) on n GPUs:
    on a fully NVLink-connected group its one-/two-shot kernels within the workspace (`link_allreduce_us`, each
    phase paying the measured latency floor of the in-engine kernel the profile has, vLLM's custom allreduce),
    NCCL's measured terms beyond; elsewhere vLLM's rules and terms. aiconfigurator times TensorRT-LLM's own
    module unfused (`fusion_op` NONE): ~3.1 us for 6 tokens of hidden 6144 on 2 H100s, where the kernel a step runs,
    fused with the residual add and RMSNorm, measured 6.98 us (FlagGems-vllm PR #773; README, Calibration)."""
    group = pick_gpus(hw, n_gpus) if n_gpus > 1 else []
    n = len(group)
    nccl = find_term(hw, "allreduce", n, "nccl") if n > 1 else None
    custom = find_term(hw, "allreduce", n, "vllm_custom") if n > 1 else None
    links = [lk.p2p_bw_gbps for lk in hw.topology.links if lk.path == "nvlink"]
    path = group_path(hw.topology, group) if n > 1 else None
    if nccl is None or custom is None or not links or path != "nvlink":
        return collective_timer(hw, "allreduce", n_gpus, engine="vllm", custom_curve=False)
    limit = TRTLLM_AR_MAX_BYTES.get(n, TRTLLM_AR_DEFAULT_MAX_BYTES)
    beyond = _placed_timer(hw, nccl, "allreduce", n, path)

    def timed(nbytes: float | np.ndarray) -> np.ndarray:
        S = np.asarray(nbytes, dtype=float)
        return np.where(S < limit, link_allreduce_us(S, n, custom.small_latency_us, max(links)), beyond(S))

    return timed


def _check(op: str, engine: str) -> None:
    if op not in OPS:
        raise AdvisorError(f"collective op {op!r}: expected one of {', '.join(OPS)}")
    if engine not in ENGINES:
        raise AdvisorError(f"--engine {engine}: expected one of {', '.join(ENGINES)}")


def allreduce_backend_reason(
    hw: HardwareProfile,
    n_gpus: int,
    nbytes: float = 0.0,
    engine: str = "vllm",
    gpus: Sequence[int] | None = None,
) -> tuple[str, str]:
    """("custom" | "nccl" | "none", one-line reason) for one allreduce of `nbytes` on n GPUs."""
    _check("allreduce", engine)
    if n_gpus <= 1:
        return "none", "single GPU: no collective"
    group = list(gpus) if gpus is not None else pick_gpus(hw, n_gpus)
    limit, why = custom_allreduce_limit(hw, group, engine)
    if limit > 0 and nbytes >= limit:
        return "nccl", f"{nbytes:.0f} B is above the in-engine limit: {why}"
    return ("custom" if limit > 0 else "nccl"), why


def allreduce_backend(hw: HardwareProfile, n_gpus: int, nbytes: float = 0.0, engine: str = "vllm") -> str:
    """Backend name: "custom" (engine's own kernel), "nccl", or "none" (one GPU).

    The reason string comes from `allreduce_backend_reason` (same arguments, returns (backend, reason)).
    """
    return allreduce_backend_reason(hw, n_gpus, nbytes, engine)[0]


def collective_time_us(
    hw: HardwareProfile,
    op: str,
    nbytes: float | np.ndarray,
    n_gpus: int,
    engine: str = "vllm",
    gpus: Sequence[int] | None = None,
) -> np.ndarray:
    """Microseconds for one collective of `nbytes` (nccl-tests size) over n GPUs; vectorised over nbytes.

    Placement: `gpus` if given, else `pick_gpus(hw, n)`. Allreduce uses the engine's custom kernel term
    below its size limit where the engine would (see allreduce_backend_reason), NCCL terms otherwise.
    p2p is one transfer over the group's slowest hop (the 2-GPU term).
    """
    return collective_timer(hw, op, n_gpus, engine, gpus)(nbytes)


def collective_timer(hw: HardwareProfile, op: str, n_gpus: int, engine: str = "vllm",
                     gpus: Sequence[int] | None = None, custom_curve: bool = True
                     ) -> Callable[[float | np.ndarray], np.ndarray]:
    """`collective_time_us` with the placement, terms and backend limit resolved once: a function of bytes.
    `custom_curve=False`: the in-engine allreduce by its two regimes only, not the measured curve of the
    engine's kernel (another engine's kernels share the algorithms but not the switch points)."""
    _check(op, engine)
    if n_gpus <= 1:
        return lambda nbytes: np.zeros_like(np.asarray(nbytes, dtype=float))
    group = list(gpus) if gpus is not None else pick_gpus(hw, n_gpus)
    n = len(group)
    path = group_path(hw.topology, group)
    nccl = find_term(hw, op, n, "nccl")
    if nccl is None:
        raise AdvisorError(f"{hw.id}: profile has no NCCL {op} term")
    limit, _ = custom_allreduce_limit(hw, group, engine) if op == "allreduce" else (0.0, "")
    custom = find_term(hw, op, n, f"{engine}_custom") or find_term(hw, op, n, "vllm_custom")

    by_nccl = _placed_timer(hw, nccl, op, n, path)
    if op != "allreduce" or limit <= 0 or custom is None:
        return by_nccl
    by_custom = _placed_timer(hw, custom, op, n, path, custom_curve)

    def timed(nbytes: float | np.ndarray) -> np.ndarray:
        S = np.asarray(nbytes, dtype=float)
        small = S < limit
        t = by_custom(S)
        if small.all():  # NCCL only for the sizes the engine hands it
            return t
        return np.where(small, t, by_nccl(S))

    return timed
