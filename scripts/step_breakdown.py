"""Where the predicted time of measured rows goes, under the shipped terms: per row, the decode step by mechanism
(dense GEMMs, MoE chain, attention, collectives, the sorting sampler, fixed time) and the TTFT by part (staggered
arrivals, the benchmark's synchronized waves, the per-request time), beside what was measured.

    python -m scripts.step_breakdown ROWS.csv --hw b200-sxm --engine trtllm [--model Llama-3.1-70B] [--max-users 8]

ROWS.csv: a measurement file (default columns of tests/data/bench/silicon_dev.csv). Milliseconds throughout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]

MECHANISMS = ("gemm", "moe", "attention", "collectives", "sampler", "fixed")


def breakdown(bucket: Any, terms: Any) -> list[dict[str, float]]:
    """Per row of `bucket` (a `predict_rows.Bucket`): measured and predicted TPOT/TTFT, the decode step (its
    running requests at the mean decode context) by mechanism, and TTFT with every request staggered
    (`steady`), every request in a synchronized wave (`wave`), the share of waves and the per-request time; one
    prompt's prefill alone (`prefill`: the step with its I tokens and nothing else)."""
    from advisor.calibrate.predict_rows import run_bucket
    from advisor.cost.serving import RunOptions, scheduler, serve
    from advisor.cost.step import comm_fn, step_time

    b = bucket
    comm = comm_fn(b.hw, b.engine)

    def step(dec: np.ndarray, ctx: np.ndarray, pre: np.ndarray, ctx_pre: np.ndarray,
             sampled: np.ndarray) -> dict[str, np.ndarray]:
        return step_time(b.features, b.hw, terms, comm, dec, ctx, pre, ctx_pre, sampled)

    sched, opts = scheduler(b.engine, b.features.batched_tokens), RunOptions(*b.options.T)
    no_req = type(terms)(**{**terms.model_dump(), "request_overhead_us": 0.0})
    steady = serve(b.features, no_req, step, sched, b.concurrency, b.input_len, b.output_len, 0.0, opts)
    wave = serve(b.features, no_req, step, sched, b.concurrency, b.input_len, b.output_len, 1.0, opts)
    full = run_bucket(b, terms)
    zero = 0 * b.input_len
    alone = np.broadcast_to(step(zero, b.input_len, b.input_len, b.input_len / 2, 1 + zero)["total"], zero.shape)
    out = []
    for j, r in enumerate(b.rows):
        row = {"tpot_ms": r.tpot_ms or float("nan"), "tpot_pred": float(full["tpot_ms"][j]),
               "ttft_ms": r.ttft_ms or float("nan"), "ttft_pred": float(full["ttft_ms"][j]),
               "running": float(steady["running"][j]), "step": float(steady["step_total"][j]) * 1e3,
               "ttft_steady": float(steady["ttft_s"][j]) * 1e3, "ttft_wave": float(wave["ttft_s"][j]) * 1e3,
               "wave_share": terms.bench_wave_share, "request_ms": terms.request_overhead_us / 1e3,
               "prefill": float(alone[j]) * 1e3}
        row.update({m: float(steady[f"step_mech_{m}"][j]) * 1e3 for m in MECHANISMS})
        out.append(row)
    return out


def selected(prog: str, doc: str) -> tuple[Any, Any] | int:
    """The command line both diagnostics take (ROWS.csv --hw --engine [--model] [--max-users]): the bucket of the
    matching rows that can be predicted (`predict_rows.Bucket`) and the GPU's shipped terms, or 2 after one line on
    stderr."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--hw", required=True)
    ap.add_argument("--engine", required=True, choices=("vllm", "sglang", "trtllm"))
    ap.add_argument("--model", default="", help="only rows whose model id contains this")
    ap.add_argument("--max-users", type=int, default=0, help="only rows with at most this many users")
    args = ap.parse_args()
    from advisor.calibrate.predict_rows import engine_label
    from advisor.calibrate.predict_table import prepare
    from advisor.calibrate.rowtable import read_measurements
    from advisor.calibrate.store import terms_for
    from advisor.errors import AdvisorError
    from advisor.hardware import load_profile

    try:
        rows = [r for r in read_measurements(args.rows).rows if r.hardware == args.hw and args.model in r.model
                and engine_label(r) == args.engine and (not args.max_users or r.concurrency <= args.max_users)]
        terms = terms_for(load_profile(args.hw), args.engine)[0]
    except AdvisorError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    bucket = prepare(rows)[1].get((args.hw, args.engine))
    if bucket is None:
        print(f"{prog}: no predictable {args.engine} row on {args.hw} in {args.rows}", file=sys.stderr)
        return 2
    return bucket, terms


def main() -> int:
    got = selected("step_breakdown", __doc__)
    if isinstance(got, int):
        return got
    bucket, terms = got
    print(f"terms: {', '.join(f'{k} {v:.4g}' for k, v in terms.model_dump().items())}")
    print("model                  fmt    tp dp ep users  in  | TPOT meas/pred  step = " + " + ".join(MECHANISMS)
          + " | TTFT meas/pred  steady wave | prefill, meas TTFT in prefills")
    for r, d in zip(bucket.rows, breakdown(bucket, terms), strict=True):
        print(f"{r.model.split('/')[-1][:22]:22s} {r.weight_dtype or '-':6s} {r.tp:2d} {r.dp:2d} {r.ep:2d} "
              f"{r.concurrency:5d} {r.input_len:5d} | {d['tpot_ms']:6.2f} {d['tpot_pred']:6.2f}  {d['step']:6.2f} = "
              + " + ".join(f"{d[m]:5.2f}" for m in MECHANISMS)
              + f" | {d['ttft_ms']:8.1f} {d['ttft_pred']:8.1f}  {d['ttft_steady']:7.1f} {d['ttft_wave']:8.1f}"
              + f" | {d['prefill']:7.1f} {d['ttft_ms'] / d['prefill']:5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
