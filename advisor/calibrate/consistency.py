"""Sweeps that contradict themselves: set aside from a fit, still predicted and scored.

A sweep is one run's settings measured at several concurrencies (every field of a row but the concurrency, the
measured values and where the row came from). An engine step's time does not fall as its batch grows, and two
batches of c cost at least one batch of 2c (the weights are read once for both), so adding users can neither
make each user's decoding much faster nor cut the users' summed decode rate, users / TPOT. A sweep in which
adding users cuts TPOT below 1 / TPOT_DROP of what fewer users measured, or cuts users / TPOT below
1 / RATE_DROP of it, measured something other than the run it states (e.g. aiconfigurator's GB200 Qwen3-32B
TP2 rows of TensorRT-LLM 1.3.0rc1: TPOT 8.1 ms at one user, 41.9 ms at two). Its rows would steer the fitted
terms toward whatever went wrong; they are still predicted, and their errors still count.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.calibrate.measurements import Measurement

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
