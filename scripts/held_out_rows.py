"""Every measured row predicted with its model (or its GPU) held out, one CSV line each: what a change to the
physics is judged on, row by row (signed error by model, plan, lengths and concurrency), beside the summary the
README reports (`research/splits.py: summarize`).

    python -m scripts.held_out_rows model|hardware OUT.csv [--engine sglang] [--bench DIR]

The rows and fits of scripts/refit_calibrations.py: silicon_dev.csv, the case study and public_clean.csv, the
pooled fit per engine (`research/splits.py: pooled_fitter`). On 2 cores, the held-out groups in parallel: model
held out ~17 min for every engine, ~2 min for SGLang alone; GPU held out ~5 min. Compare two runs' CSVs line
by line (same row order).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

from research.splits import HeldOut, band_of
from scripts.refit_calibrations import files  # (the same rows the shipped calibrations are fitted on)

REPO = Path(__file__).resolve().parents[1]

COLUMNS = ("hardware", "engine", "model", "weight_dtype", "tp", "dp", "ep", "concurrency", "band", "moe",
           "input_len", "output_len", "tpot_ms", "tpot_pred", "tpot_err_pct", "ttft_ms", "ttft_pred",
           "ttft_err_pct", "source")


def line(h: HeldOut) -> dict[str, object]:
    """One held-out row as a CSV line: measured, predicted, signed error (100 (pred - meas) / meas)."""
    r = h.row

    def err(metric: str) -> str:
        e = h.error_pct(metric)
        return "" if e is None else f"{e:.2f}"

    return {"hardware": h.key[0], "engine": h.key[1], "model": r.model, "weight_dtype": r.weight_dtype or "",
            "tp": r.tp, "dp": r.dp, "ep": r.ep, "concurrency": r.concurrency, "band": band_of(r.concurrency),
            "moe": int(h.moe), "input_len": r.input_len, "output_len": r.output_len,
            "tpot_ms": "" if r.tpot_ms is None else r.tpot_ms, "tpot_pred": f"{h.predicted['tpot_ms']:.4f}",
            "tpot_err_pct": err("tpot_ms"), "ttft_ms": "" if r.ttft_ms is None else r.ttft_ms,
            "ttft_pred": f"{h.predicted['ttft_ms']:.3f}", "ttft_err_pct": err("ttft_ms"), "source": r.source}


def write_rows(held: list[HeldOut], path: Path) -> None:
    from advisor.files import atomic_output

    with atomic_output(path, "w") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS), lineterminator="\n")
        w.writeheader()
        w.writerows(line(h) for h in held)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("split", choices=("model", "hardware"))
    ap.add_argument("out", type=Path, help="CSV to write (its summary goes beside it as .json)")
    ap.add_argument("--engine", choices=("vllm", "sglang", "trtllm"), help="only this engine's rows (its fit is "
                    "the same: each engine is fitted on its own rows)")
    ap.add_argument("--bench", type=Path, default=REPO / "tests" / "data" / "bench")
    args = ap.parse_args()
    from advisor.calibrate.predict_rows import engine_label
    from advisor.calibrate.predict_table import prepare
    from advisor.calibrate.rowtable import read_measurements
    from advisor.errors import AdvisorError
    from advisor.files import write_atomic
    from research.splits import held_out, pooled_fitter, summarize

    try:
        rows = [r for f in files(args.bench) for r in read_measurements(f).rows]
    except AdvisorError as err:
        print(f"held_out_rows: {err}", file=sys.stderr)
        return 2
    rows = [r for r in rows if args.engine in (None, engine_label(r))]
    held = held_out(prepare(rows)[1], args.split, pooled_fitter(), os.cpu_count() or 1)
    write_rows(held, args.out)
    summary = summarize(held)
    write_atomic(args.out.with_suffix(".json"), json.dumps(summary, indent=1) + "\n")
    o = summary["overall"]
    print(f"{len(held)} rows, {args.split} held out: TPOT {o['tpot_ms']}, TTFT {o['ttft_ms']}, "
          f"TPOT bias by band {o['tpot_bias_by_band']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
