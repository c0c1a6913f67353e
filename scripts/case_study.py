"""Print the case-study points (8x RTX PRO 6000) next to the model's predictions.

    python scripts/case_study.py [CSV] [--readme README.md]   # default CSV: advisor/examples/case_study.csv

Predictions: the cost model with `Terms()` priors (uncalibrated); with the shipped calibration for the
row's hardware and engine (fitted on these four rows and the public RTX PRO 6000 rows, so in-sample);
and held out: fitted on the public RTX PRO 6000 rows only (tests/data/bench/public_clean.csv),
never on these rows. vLLM defaults (`Settings()`). The CSV
does not give input lengths: 1024 is assumed. Output length: the row's own (512 for the single-user
rows) or else 1024. Error = (predicted - measured) / measured, signed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/readme_block.py

from readme_block import replace_block  # noqa: E402

from advisor.calibrate.measurements import Measurement, read_measurements  # noqa: E402
from advisor.calibrate.store import terms_for  # noqa: E402
from advisor.catalog import lookup  # noqa: E402
from advisor.cost.plan import Plan  # noqa: E402
from advisor.cost.sweep import evaluate, make_case  # noqa: E402
from advisor.cost.terms import Terms  # noqa: E402
from advisor.cost.workload import Settings  # noqa: E402
from advisor.errors import AdvisorError  # noqa: E402
from advisor.hardware import load_profile  # noqa: E402

CSV = REPO / "advisor" / "examples" / "case_study.csv"
PUBLIC_CLEAN = REPO / "tests" / "data" / "bench" / "public_clean.csv"
ASSUMED_INPUT_LEN = 1024  # not stated in the case study
DEFAULT_OUTPUT_LEN = 1024  # where the case study does not state it


def held_out_terms() -> Terms:
    """Terms fitted on the cleaned public RTX PRO 6000 vLLM rows only (none of the case-study rows)."""
    from advisor.calibrate.store import read_calibration
    from advisor.commands.calibrate import calibrate_doc

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "held_out.json"
        # a held-out comparison, not a replacement of the shipped fit: past the not-worse guard
        calibrate_doc([str(PUBLIC_CLEAN)], "rtx-pro-6000-server", "vllm", out, force=True)
        return read_calibration(out).terms


def predict(row: Measurement, terms: Terms | None = None) -> tuple[dict[str, float] | None, str, int, int]:
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
    pred = evaluate([case], hw, settings, terms or Terms(), np.array([row.concurrency]), np.array([i]),
                    np.array([o])).at(0, row.concurrency)
    assert pred.tpot_ms is not None and pred.output_tok_s is not None
    return {"tpot_ms": pred.tpot_ms, "output_tok_s": pred.output_tok_s}, plan.label(), i, o


def table(rows: list[Measurement], held_out: Terms) -> list[str]:
    lines = ["| Model | Plan | Users | In | Out | Metric | Measured | Predicted | Error | Calibrated | Error "
             "| Held out | Error |", "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        pred, label, i, o = predict(row)
        cal, _, _, _ = predict(row, terms_for(load_profile(row.hardware), "vllm")[0])
        out, _, _, _ = predict(row, held_out)
        i_txt = f"{i}" if row.input_len else f"{i}*"
        for metric, unit in (("tpot_ms", "TPOT ms"), ("output_tok_s", "output tok/s")):
            measured = getattr(row, metric)
            if measured is None:
                continue
            if pred is None:
                lines.append(f"| {row.model} | {label} | {row.concurrency} | {i_txt} | {o} | {unit} | "
                             f"{measured:g} | - | - | - | - | - | - |")
                continue
            err = (pred[metric] - measured) / measured * 100
            cells = f"{pred[metric]:.1f} | {err:+.0f}%"
            for other in (cal, out):
                if other is not None:
                    cells += f" | {other[metric]:.1f} | {(other[metric] - measured) / measured * 100:+.0f}%"
            lines.append(f"| {row.model} | {label} | {row.concurrency} | {i_txt} | {o} | {unit} | "
                         f"{measured:g} | {cells} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?", default=str(CSV), help="measurement CSV (the columns of `advisor check --help`)")
    ap.add_argument("--readme", type=Path, help="README whose case-study block to replace")
    args = ap.parse_args(argv)
    try:
        data = read_measurements(args.csv)
        lines = table(data.rows, held_out_terms())
    except AdvisorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    note = (f"Predicted: uncalibrated (Terms() priors); Calibrated: the shipped rtx-pro-6000-server/vllm "
            f"calibration, fitted on these rows and the public RTX PRO 6000 rows (in-sample); Held out: fitted on the "
            f"public RTX PRO 6000 rows only, never on these. vLLM defaults. "
            f"* input length not in the CSV: {ASSUMED_INPUT_LEN} assumed; output length {DEFAULT_OUTPUT_LEN} "
            f"where the CSV gives none.")
    print("\n".join(lines))
    print("\n" + note)
    if args.readme:
        replace_block(args.readme, "case-study", "\n".join(lines) + "\n\n" + note)
    for bad in data.rejected:
        print(f"skipped row {bad.row}: {bad.reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
