"""Serving predictions of a sweep or a bucket of measured rows: the engine's scheduler (`cost/serving.py`)
over the step model (`cost/step.py`), one numpy evaluation over plans x concurrency x lengths."""

from __future__ import annotations

import numpy as np

from advisor.cost.features import Features
from advisor.cost.serving import RunOptions, StepFn, scheduler, serve, wave_share
from advisor.cost.step import Comm, comm_fn, step_time
from advisor.cost.terms import Terms
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster


def serving_step(F: Features, hw: HardwareProfile, terms: Terms, comm: Comm) -> StepFn:
    """The step time the scheduler calls (`serving.serve`): `step.step_time`, and with MTP drafts (F.spec_k > 0) a
    step verifies k + 1 positions per decoding sequence, then drafts k tokens: k passes of one (average) layer,
    counted as overhead."""
    spec = bool(np.any(F.spec_k > 0))

    def step(dec: np.ndarray, ctx: np.ndarray, pre: np.ndarray, ctx_pre: np.ndarray,
             sampled: np.ndarray) -> dict[str, np.ndarray]:
        if not spec:
            return step_time(F, hw, terms, comm, dec, ctx, pre, ctx_pre, sampled)
        out = dict(step_time(F, hw, terms, comm, dec, ctx, pre, ctx_pre, sampled, q=1 + F.spec_k))
        one = step_time(F, hw, terms, comm, dec, ctx, 0 * pre, ctx_pre, dec)["total"]
        draft = np.where(dec > 0, F.spec_k * one / F.layers, 0.0)
        out["overhead"] = out["overhead"] + draft
        out["total"] = out["total"] + draft
        return out

    return step


def predict(F: Features, hw: HardwareProfile, terms: Terms, engine: str, concurrency: np.ndarray,
            input_len: np.ndarray, output_len: np.ndarray, benchmark: bool = False,
            fixed_lengths: np.ndarray | bool = False, options: RunOptions = RunOptions(),
            cluster: Cluster | None = None) -> dict[str, np.ndarray]:
    """TTFT, TPOT, tok/s, running requests and the step breakdown (arrays broadcast to [P, C, L]); `benchmark`:
    as a closed-loop benchmark run measures them (its synchronized rounds included, `fixed_lengths` where every
    request had the same lengths), else the steady state of a deployment; `options`: the run's scheduling
    options (engine defaults unless given); `cluster`: the nodes the plans span (one node when None)."""
    step = serving_step(F, hw, terms, comm_fn(hw, engine, cluster))
    sched = scheduler(engine, F.batched_tokens)  # the resolved token budget per step (`EngineArgs`)
    share = wave_share(terms.bench_wave_share, sched, fixed_lengths) if benchmark else 0.0
    return serve(F, terms, step, sched, concurrency, input_len, output_len, share, options)
