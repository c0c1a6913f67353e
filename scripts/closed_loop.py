"""A benchmark's closed loop simulated step by step under the shipped step model, beside the measurement and the
closed form the predictions use (`advisor/cost/serving.py: serve`), for the vLLM rows of a measurement file.

    python -m scripts.closed_loop ROWS.csv --hw b200-sxm [--model Llama-3.1-70B] [--max-users 64]

The client is InferenceX's (`utils/bench_serving/benchmark_serving.py`): every user released at once, each
completion sending the next request until 10 x users were sent (`--num-prompts` 10 x concurrency), lengths drawn
uniformly from `length_ratio` x to 1 x the stated ones. Per row, milliseconds: measured TTFT, the prediction
(fitted wave share), the closed form with the share of requests in the released round (1 in 10, no fitted
share), the simulation's mean (first round and the rest), all with the fitted per-request time added; TPOT
measured, predicted, simulated. Where the closed form and the simulation agree and the measurement is above
both, the gap is first-token time the step model does not have (README, Calibration). `simulate` also runs DP
ranks in lockstep, each with its own scheduler (`tests/test_cost_timing.py` checks `serve`'s DP ranks against it).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]

ROUNDS = 10  # InferenceX: --num-prompts 10 x --max-concurrency (benchmarks/*.sh, every revision since 2025-08)
Step = Callable[[float, float, float, float, float], float]  # (decodes, their context, prompt tokens, ctx, rows) -> s


def simulate(step: Step, budget: float, users: int, isl: int, osl: int, ratio: float = 0.8, rounds: int = ROUNDS,
             ahead: int = 1, seed: int = 0, ranks: int = 1,
             lockstep: Callable[[list[tuple[float, ...]]], float] | None = None,
             mixed: bool = True) -> tuple[float, float, float]:
    """Mean TTFT, mean TPOT and the first round's mean TTFT (seconds) of `rounds` x `users` requests under vLLM's
    scheduler (`v1/core/sched/scheduler.py: Scheduler.schedule`): each step the running requests first (one
    decode token each, or their next prompt chunk), then waiting prompts FCFS within the token budget; with
    `ahead` (async scheduling) a step is scheduled while the one before runs, so it sees what arrived before
    that one began. A prompt's first token leaves with the step that finishes it.

    `ranks` DP ranks, each its own scheduler and budget, step together: a step takes `lockstep` of every rank's
    (decodes, their context, prompt tokens, their context, rows), an idle rank's all zero (its dummy batch).
    Users start spread evenly and a completion's next request goes to the rank it left (vLLM's DP load
    balancer sends a request to the least-loaded rank, which in a closed loop is the one that just finished).
    `mixed` False: SGLang's prefill-first steps (`managers/scheduler.py: get_next_batch_to_run`), a rank with a
    prompt to prefill runs a prefill step (its chunks within the budget, no decodes), else a decode step."""
    rng = np.random.default_rng(seed)
    n = rounds * users
    ins = rng.integers(int(ratio * isl), isl + 1, n) if ratio < 1 else np.full(n, isl)
    outs = rng.integers(int(ratio * osl), osl + 1, n) if ratio < 1 else np.full(n, osl)
    arrive, first, done = np.full(n, np.inf), np.zeros(n), np.zeros(n)
    arrive[:users] = 0.0
    left, made = ins.copy(), np.zeros(n, int)
    waiting: list[list[int]] = [list(range(r, users, ranks)) for r in range(ranks)]
    running: list[list[int]] = [[] for _ in range(ranks)]
    combine = lockstep or (lambda per_rank: step(*per_rank[0]))
    sent, t, seen_at = users, 0.0, 0.0
    while any(running) or any(waiting):
        batches = []
        for r in range(ranks):
            ready = [i for i in waiting[r] if arrive[i] <= (seen_at if ahead else t)]
            todo = [i for i in running[r] if left[i] > 0] + ready
            dec = [i for i in running[r] if left[i] == 0] if mixed or not todo else []
            room, chunks = budget - len(dec), []
            for i in todo:
                if room <= 0:
                    break
                chunks.append((i, min(int(left[i]), int(room))))
                room -= chunks[-1][1]
                if i in waiting[r]:
                    waiting[r].remove(i)
                    running[r].append(i)
            batches.append((dec, chunks))
        if not any(dec or chunks for dec, chunks in batches):  # idle: the next arrival is taken at once
            t = seen_at = min(arrive[i] for w in waiting for i in w)
            continue
        shapes: list[tuple[float, ...]] = []
        for dec, chunks in batches:
            ctx = float(np.mean([ins[i] + made[i] for i in dec])) if dec else float(isl)
            ctx_pre = float(np.mean([ins[i] - left[i] + k / 2 for i, k in chunks])) if chunks else isl / 2
            shapes.append((float(len(dec)), ctx, float(sum(k for _, k in chunks)), ctx_pre,
                           float(len(dec) + len(chunks))))
        seen_at, t = t, t + combine(shapes)
        for r, (dec, chunks) in enumerate(batches):
            for i, k in chunks:
                left[i] -= k
                if left[i] == 0:
                    made[i], first[i] = 1, t
            for i in dec:
                made[i] += 1
                if made[i] >= outs[i]:
                    running[r].remove(i)
                    done[i] = t
                    if sent < n:
                        arrive[sent] = t
                        waiting[r].append(sent)
                        sent += 1
    ttft = first - arrive
    return float(np.mean(ttft)), float(np.mean((done - first) / np.maximum(outs - 1, 1))), float(np.mean(ttft[:users]))


def _row_step(F: Any, hw: Any, terms: Any, comm: Any) -> Step:
    """One row's step time (seconds) from the shipped step model, cached on contexts rounded to 100 tokens and
    prompt tokens to 16 (the step time moves < 1%; the loop asks for the same steps thousands of times)."""
    from advisor.cost.step import step_time

    @functools.cache
    def cached(dec: float, ctx: float, pre: float, ctx_pre: float, rows_: float) -> float:
        a = [np.array([x]) for x in (dec, ctx, pre, ctx_pre, rows_)]
        return float(step_time(F, hw, terms, comm, *a)["total"][0])

    def step(dec: float, ctx: float, pre: float, ctx_pre: float, rows_: float) -> float:
        return cached(dec, round(ctx, -2), float(np.ceil(pre / 16) * 16), round(ctx_pre, -2), rows_)

    return step


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--hw", required=True)
    ap.add_argument("--model", default="", help="substring of the model id")
    ap.add_argument("--max-users", type=int, default=64)
    args = ap.parse_args()
    from advisor.calibrate.predict_rows import run_bucket
    from advisor.calibrate.predict_table import prepare
    from advisor.calibrate.rowtable import read_measurements
    from advisor.calibrate.store import terms_for
    from advisor.cost.step import comm_fn

    rows = [r for r in read_measurements(args.rows).rows if r.hardware == args.hw and (r.engine or "vllm") == "vllm"
            and args.model in r.model and r.concurrency <= args.max_users and not r.spec_tokens]
    buckets = prepare(rows)[1]
    if (args.hw, "vllm") not in buckets:
        print(f"no predictable vLLM rows on {args.hw}", file=sys.stderr)
        return 2
    b = buckets[(args.hw, "vllm")]
    terms = terms_for(b.hw, "vllm")[0]
    full = run_bucket(b, terms)
    first_round = run_bucket(b, terms.model_copy(update={"bench_wave_share": 1 / ROUNDS}))
    comm, req = comm_fn(b.hw, b.engine), terms.request_overhead_us / 1e3
    print(f"{args.hw} vLLM: fitted wave share {terms.bench_wave_share:.3f}, per-request time {req:.1f} ms; ms")
    print("model                  tp users    in   out | TTFT meas   pred  1/10 form  simulated (first round) | "
          "TPOT meas  pred   sim")
    for j in sorted(range(len(b.rows)), key=lambda j: (b.rows[j].model, b.rows[j].tp, b.rows[j].input_len or 0,
                                                       b.rows[j].concurrency)):
        r = b.rows[j]
        step = _row_step(b.features.take(np.array([j])), b.hw, terms, comm)
        ttft, tpot, first = simulate(step, float(b.features.batched_tokens[j]), int(r.concurrency),
                                     int(r.input_len or 0), int(r.output_len or 0), r.length_ratio or 1.0,
                                     ahead=int(b.options[j][-1]))
        print(f"{r.model.split('/')[-1][:22]:22s} {r.tp:2d} {r.concurrency:5d} {r.input_len:5d} {r.output_len:5d} | "
              f"{r.ttft_ms or float('nan'):9.1f} {full['ttft_ms'][j]:6.1f} {first_round['ttft_ms'][j]:10.1f} "
              f"{ttft * 1e3 + req:10.1f} ({first * 1e3 + req:7.1f}) | {r.tpot_ms or float('nan'):9.2f} "
              f"{full['tpot_ms'][j]:5.2f} {tpot * 1e3:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
