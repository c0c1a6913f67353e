"""Sweeps that contradict themselves, or the hardware they name: set aside from a fit, still predicted and scored.

A sweep is one run's settings measured at several concurrencies (every field of a row but the concurrency, the
measured values and where the row came from). An engine step's time does not fall as its batch grows, and two
batches of c cost at least one batch of 2c (the weights are read once for both), so adding users can neither
make each user's decoding much faster nor cut the users' summed decode rate, users / TPOT. A sweep in which
adding users cuts TPOT below 1 / TPOT_DROP of what fewer users measured, or cuts users / TPOT below
1 / RATE_DROP of it, measured something other than the run it states (e.g. aiconfigurator's GB200 Qwen3-32B
TP2 rows of TensorRT-LLM 1.3.0rc1: TPOT 8.1 ms at one user, 41.9 ms at two). Its rows would steer the fitted
terms toward whatever went wrong; they are still predicted, and their errors still count.

Across GPUs: a node at least as fast as another on every spec a step depends on (`dominates`) runs the same run
(same architecture, engine, plan, formats, lengths, users and scheduling settings, any release) at least about as
fast. A sweep on it whose TPOT is more than TPOT_DROP times the other GPU's for the same run measured something no
spec sheet holds, a kernel path that release lacked for that GPU (`slower_than_dominated`; e.g. SGLang
v0.5.10.post1 DeepSeek-R1 with 8192-token prompts on B300, 1.6-2.2x the TPOT of the same recipe on B200 under
0.5.9). Fitted through, such rows set the GPU's terms for every other model on it.

Against the GPUs' peak (`beyond_peak`): a row's users, lengths, TTFT and TPOT say how many prompt and output
tokens a second its GPUs ran; each passes the model's non-expert GEMMs, whose FLOPs at the spec sheet's dense
rate are a floor on its time (`Features.dense_gemm_s`; the prompt's tokens skip the output head). A row that
needs more than the GPUs' whole time for them did not run the users it is labelled with (e.g. aiconfigurator's
Qwen3-32B NVFP4 TP2 rows at 15000/500, whose ids say 416 and 448 users where the source's cell says 13 and 14:
3.0x and 2.9x the peak at the ids' users, 0.1x at the cell's; every other row of silicon_dev.csv is below 0.5x).
Prompts are taken as computed in full, so a benchmark of repeated prompts served from a prefix cache fails it too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from advisor.calibrate.measurements import Measurement
from advisor.cost.features import Features
from advisor.hardware.schema import HardwareProfile
from advisor.text import plural

TPOT_DROP = 1.5  # beyond the run-to-run spread of TPOT (a few %) and CUDA-graph padding steps (~10-20%)
RATE_DROP = 2.0
NOT_SETTINGS = {"concurrency", "ttft_ms", "tpot_ms", "output_tok_s", "source", "row", "file"}
SWEEP_FIELDS = tuple(f for f in Measurement.model_fields if f not in NOT_SETTINGS)


def sweep_of(row: Measurement) -> tuple[object, ...]:
    return tuple(getattr(row, f) for f in SWEEP_FIELDS)


def contradiction(fewer: Measurement, more: Measurement) -> str | None:
    """Why two rows of one sweep contradict each other (`more` ran more users than `fewer`), or None."""
    a, b = fewer.tpot_ms, more.tpot_ms
    if a is None or b is None or more.concurrency <= fewer.concurrency:
        return None
    if b * TPOT_DROP < a:
        why = f"TPOT fell from {a:g} to {b:g} ms"
    elif more.concurrency / b * RATE_DROP < fewer.concurrency / a:
        why = f"users / TPOT fell from {fewer.concurrency / a * 1e3:.0f} to {more.concurrency / b * 1e3:.0f} tok/s"
    else:
        return None
    return (f"{more.model} on {more.hardware}/{more.engine or 'vllm'} {more.engine_version or ''} TP{more.tp} "
            f"{more.input_len}/{more.output_len}: {why} from {fewer.concurrency} to {more.concurrency} users")


def inconsistent(rows: Sequence[Measurement]) -> dict[int, str]:
    """Positions in `rows` of every row of a self-contradicting sweep, with the first contradiction found."""
    sweeps: dict[tuple[object, ...], list[int]] = {}
    for i, r in enumerate(rows):
        sweeps.setdefault(sweep_of(r), []).append(i)
    out: dict[int, str] = {}
    for members in sweeps.values():
        ordered = sorted(members, key=lambda i: rows[i].concurrency)
        why = next((w for j, i in enumerate(ordered) for k in ordered[j + 1:]
                    if (w := contradiction(rows[i], rows[k]))), None)
        if why:
            out.update(dict.fromkeys(members, why))
    return out


# What two runs on different GPUs share when they ran the same thing: a sweep's settings but the GPU, the release
# and the model's name (the caller maps names to architectures), and the users.
RUN_FIELDS = tuple(f for f in SWEEP_FIELDS if f not in ("hardware", "engine_version", "model"))


def dominates(a: HardwareProfile, b: HardwareProfile) -> bool:
    """Whether node `a` is at least node `b` on every spec a serving step's time depends on (HBM bandwidth, dense
    FLOP/s in each format, memory, its fastest GPU-to-GPU link, the same interconnect class), `b` not being `a`."""
    if a.id == b.id or a.interconnect_class != b.interconnect_class:
        return False
    link = max((x.p2p_bw_gbps for x in a.topology.links), default=0.0) >= \
        max((x.p2p_bw_gbps for x in b.topology.links), default=0.0)
    ga, gb = a.gpu, b.gpu
    return (link and ga.mem_bw_bytes_per_s >= gb.mem_bw_bytes_per_s and ga.memory_bytes >= gb.memory_bytes
            and all(ga.dense_flops_per_s(d) >= gb.dense_flops_per_s(d) for d in ("bf16", "fp8", "fp4")))


def slower_than_dominated(runs: Mapping[str, tuple[HardwareProfile, Sequence[Measurement]]],
                          arch: Callable[[str], object]) -> dict[str, dict[int, str]]:
    """Per GPU id (of `runs`: id -> (profile, rows)), positions in its rows of every row of a sweep in which some
    row's TPOT is more than TPOT_DROP times the lowest TPOT measured for the same run (`RUN_FIELDS`, architecture
    `arch(model)`, users) on a GPU it `dominates`, with the first such comparison."""
    def run(r: Measurement) -> tuple[object, ...]:
        return (arch(r.model), r.concurrency, *(getattr(r, f) for f in RUN_FIELDS))

    fastest: dict[tuple[str, tuple[object, ...]], Measurement] = {}
    for hw, (_, rows) in runs.items():
        for r in sorted((r for r in rows if r.tpot_ms), key=lambda r: -(r.tpot_ms or 0.0)):
            fastest[(hw, run(r))] = r  # the lowest TPOT is written last
    out: dict[str, dict[int, str]] = {}
    for hw, (prof, rows) in runs.items():
        slower = [h for h, (p, _) in runs.items() if dominates(prof, p)]
        sweeps: dict[tuple[object, ...], list[int]] = {}
        for i, r in enumerate(rows):
            sweeps.setdefault(sweep_of(r), []).append(i)
        for members in sweeps.values():
            why = next((_slower_why(rows[i], hw, h, ref) for i in members for h in slower
                        if (ref := fastest.get((h, run(rows[i])))) is not None
                        and (rows[i].tpot_ms or 0.0) > TPOT_DROP * (ref.tpot_ms or 0.0)), None)
            if why:
                out.setdefault(hw, {}).update(dict.fromkeys(members, why))
    return out


def _slower_why(r: Measurement, hw: str, other: str, ref: Measurement) -> str:
    t, t0 = r.tpot_ms or 0.0, ref.tpot_ms or 0.0
    return (f"{r.model} on {hw}/{r.engine or 'vllm'} {r.engine_version or ''} TP{r.tp} {r.input_len}/{r.output_len} "
            f"at {plural(r.concurrency, 'user')}: TPOT {t:g} ms, {t / t0:.1f}x the same run on {other} "
            f"{ref.engine_version or ''} ({t0:g} ms), a GPU it is at least on every spec")


def peak_share(F: Features, hw: HardwareProfile, concurrency: np.ndarray, input_len: np.ndarray,
               output_len: np.ndarray, ttft_ms: np.ndarray, tpot_ms: np.ndarray) -> np.ndarray:
    """Share of one GPU's time its non-expert GEMMs take at the dense peak, for the rate a row's latencies imply
    in a closed loop: requests/s = users / (TTFT + (O - 1) TPOT), per DP rank; each request's O output tokens cost
    `dense_gemm_s` each, its I prompt tokens that less the output head's 2 x vocab x hidden / TP FLOPs (at the
    BF16 rate, the slowest a head runs: a floor); a PP stage holds 1 / PP of it. Nan where TTFT or TPOT is not
    measured (a tok/s figure may count decode time only)."""
    rate = concurrency / ((ttft_ms + np.maximum(output_len - 1, 0) * tpot_ms) * 1e-3)
    head_s = 2 * F.vocab * F.hidden / F.tp / hw.gpu.dense_flops_per_s("bf16")
    per_request = input_len * np.maximum(F.dense_gemm_s - head_s, 0) + output_len * F.dense_gemm_s
    return rate / np.maximum(F.dp, 1) * per_request / np.maximum(F.pp, 1)


def beyond_peak(rows: Sequence[Measurement], F: Features, hw: HardwareProfile, input_len: np.ndarray,
                output_len: np.ndarray) -> dict[int, str]:
    """Positions in `rows` (with their features [N] and the mean lengths the benchmark ran) of the rows whose
    measurements need more than their GPUs' peak (`peak_share` > 1), with the reason."""
    def col(name: str) -> np.ndarray:
        return np.array([getattr(r, name) or np.nan for r in rows], float)

    conc = np.array([r.concurrency for r in rows], float)
    share = peak_share(F, hw, conc, input_len, output_len, col("ttft_ms"), col("tpot_ms"))
    return {i: (f"{r.model} on {hw.id}/{r.engine or 'vllm'} {r.engine_version or ''} TP{r.tp} "
                f"{r.input_len}/{r.output_len} at {plural(r.concurrency, 'user')}: its TTFT and TPOT need "
                f"{share[i]:.1f}x "
                "the GPUs' peak FLOP/s for the non-expert GEMMs alone: it ran fewer users, or served its prompts "
                "from a prefix cache")
            for i, r in enumerate(rows) if share[i] > 1.0}
