"""Print the case-study points (8x RTX PRO 6000, DESIGN.md §5) next to the uncalibrated prediction.

    python scripts/case_study.py [CSV]     # default: ../shared/data/bench/case_study.csv next to the repo

Prediction: the cost model with `Terms()` priors (no calibration), vLLM defaults (`Settings()`). The CSV
does not give input lengths: 1024 is assumed. Output length: the row's own (512 for the single-user
rows) or else 1024. Error = (predicted - measured) / measured, signed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from advisor.calibrate.measurements import Measurement, read_measurements  # noqa: E402
from advisor.catalog import lookup  # noqa: E402
from advisor.cost.plan import Plan  # noqa: E402
from advisor.cost.predict import evaluate, make_case  # noqa: E402
from advisor.cost.terms import Terms  # noqa: E402
from advisor.cost.workload import Settings  # noqa: E402
from advisor.errors import AdvisorError  # noqa: E402
from advisor.hardware import load_profile  # noqa: E402

CSV = REPO.parent / "shared" / "data" / "bench" / "case_study.csv"
ASSUMED_INPUT_LEN = 1024  # not stated in the case study
DEFAULT_OUTPUT_LEN = 1024  # where the case study does not state it


def predict(row: Measurement) -> tuple[dict[str, float] | None, str, int, int]:
    """Predicted tpot_ms and output_tok_s for one row (None + reason when the plan cannot run)."""
    entry = lookup(row.model)
    if entry is None:
        raise AdvisorError(f"{row.file} row {row.row}: model {row.model!r} is not in the catalog")
    hw = load_profile(row.hardware)
    settings = Settings(weight_dtype=row.weight_dtype)
    plan = Plan(tp=row.tp, pp=row.pp, dp=row.dp, ep=row.ep)
    i = row.input_len or ASSUMED_INPUT_LEN
    o = row.output_len or DEFAULT_OUTPUT_LEN
    case = make_case(entry.arch, plan, hw, settings)
    if not case.runs:
        return None, case.reason or "does not run", i, o
    out = evaluate([case], hw, settings, Terms(), np.array([row.concurrency]), np.array([i]), np.array([o]))
    return {"tpot_ms": float(out["tpot_s"][0, 0, 0]) * 1e3,
            "output_tok_s": float(out["output_tok_s"][0, 0, 0])}, plan.label(), i, o


def table(rows: list[Measurement]) -> list[str]:
    lines = ["| Model | Plan | Users | In | Out | Metric | Measured | Predicted | Error |",
             "|---|---|---:|---:|---:|---|---:|---:|---:|"]
    for row in rows:
        pred, label, i, o = predict(row)
        i_txt = f"{i}" if row.input_len else f"{i}*"
        for metric, unit in (("tpot_ms", "TPOT ms"), ("output_tok_s", "output tok/s")):
            measured = getattr(row, metric)
            if measured is None:
                continue
            if pred is None:
                lines.append(f"| {row.model} | {label} | {row.concurrency} | {i_txt} | {o} | {unit} | "
                             f"{measured:g} | - | - |")
                continue
            err = (pred[metric] - measured) / measured * 100
            lines.append(f"| {row.model} | {label} | {row.concurrency} | {i_txt} | {o} | {unit} | "
                         f"{measured:g} | {pred[metric]:.1f} | {err:+.0f}% |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?", default=str(CSV), help="measurement CSV (DESIGN.md §3.4 columns)")
    args = ap.parse_args(argv)
    try:
        data = read_measurements(args.csv)
        lines = table(data.rows)
    except AdvisorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    print(f"\nUncalibrated (Terms() priors, vLLM defaults). * input length not in the CSV: "
          f"{ASSUMED_INPUT_LEN} assumed; output length {DEFAULT_OUTPUT_LEN} where the CSV gives none.")
    for bad in data.rejected:
        print(f"skipped row {bad.row}: {bad.reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
