"""Print the case-study points (8x RTX PRO 6000) next to the model's predictions.

    python -m scripts.case_study [CSV] [--update [FILE]]   # default CSV: advisor/examples/case_study.csv

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
from pathlib import Path

import numpy as np

from advisor.calibrate.measurements import Measurement
from advisor.calibrate.rowtable import read_measurements
from advisor.calibrate.store import terms_for
from advisor.catalog import lookup
from advisor.cost.plan import Plan
from advisor.cost.sweep import Case, evaluate, make_case
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile, load_profile
from scripts.readme_block import home, replace_block

REPO = Path(__file__).resolve().parents[1]

CSV = REPO / "advisor" / "examples" / "case_study.csv"
PUBLIC_CLEAN = REPO / "tests" / "data" / "bench" / "public_clean.csv"
ASSUMED_INPUT_LEN = 1024  # not stated in the case study
DEFAULT_OUTPUT_LEN = 1024  # where the case study does not state it


def held_out_terms() -> Terms:
    """Engine-wide vLLM terms pooled over every GPU but this one (none of its rows, the case study's included)."""
    from advisor.calibrate.pooled import PooledCalibrator
    from advisor.calibrate.predict_table import prepare

    rows = [r for f in (REPO / "tests" / "data" / "bench" / "silicon_dev.csv", PUBLIC_CLEAN)
            for r in read_measurements(f).rows if r.hardware != "rtx-pro-6000-server"]
    _, buckets = prepare(rows)
    return PooledCalibrator().fit({k: b for k, b in buckets.items() if k[1] == "vllm"}).global_


def _plan(row: Measurement) -> Plan:
    return Plan(tp=row.tp, pp=row.pp, dp=row.dp, ep=row.ep)


def _case(row: Measurement) -> tuple[Case, HardwareProfile, Settings, int, int]:
    """The row's plan as a sweep case on its hardware (vLLM defaults), with the lengths predicted."""
    entry = lookup(row.model)
    if entry is None:
        raise AdvisorError(f"{row.file} row {row.row}: model {row.model!r} is not in the catalog")
    hw = load_profile(row.hardware)
    settings = Settings(weight_dtype=row.weight_dtype)
    case = make_case(entry.arch, _plan(row), hw, settings)
    return case, hw, settings, row.input_len or ASSUMED_INPUT_LEN, row.output_len or DEFAULT_OUTPUT_LEN


def predict(row: Measurement, terms: Terms | None = None) -> tuple[dict[str, float] | None, str, int, int]:
    """Predicted tpot_ms and output_tok_s for one row (None + reason when the plan cannot run)."""
    case, hw, settings, i, o = _case(row)
    label = _plan(row).label()
    if not case.runs:
        return None, case.reason or "does not run", i, o
    pred = evaluate([case], terms or Terms(), np.array([row.concurrency]), np.array([i]),
                    np.array([o])).at(0, row.concurrency)
    assert pred.tpot_ms is not None and pred.output_tok_s is not None
    return {"tpot_ms": pred.tpot_ms, "output_tok_s": pred.output_tok_s}, label, i, o


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


USERS_GRID = np.unique(np.round(np.geomspace(1, 2048, 89)).astype(int))  # concurrencies searched for `users_for`


def users_for(row: Measurement, terms: Terms) -> tuple[int, int] | None:
    """The fewest users at which the prediction reaches the row's measured tok/s, and the users one step of
    the plan runs at once there (the KV cache's or max_num_seqs' limit); None if no concurrency up to 2048
    reaches it."""
    assert row.output_tok_s is not None
    case, hw, settings, i, o = _case(row)
    if not case.runs:
        return None
    res = evaluate([case], terms, USERS_GRID, np.array([i]), np.array([o]))
    for users in USERS_GRID:
        pred = res.at(0, int(users))
        if pred.output_tok_s is not None and pred.output_tok_s >= row.output_tok_s:
            return int(users), int(pred.running_sequences or 0)
    return None


def users_line(rows: list[Measurement]) -> str:
    """Where each measured throughput sits on the calibrated curve: the users it takes to reach it."""
    parts = []
    for row in rows:
        if row.output_tok_s is None or row.concurrency <= 1:
            continue
        found = users_for(row, terms_for(load_profile(row.hardware), "vllm")[0])
        plan = _plan(row).label()
        where = (f"{found[0]:,} users ({found[1]:,} running at once)" if found
                 else "no concurrency up to 2,048 users")
        parts.append(f"{row.model} {plan}, {row.output_tok_s:,g} tok/s: {where} (table: {row.concurrency:,})")
    return ("Users at which the calibrated prediction reaches each measured throughput (same lengths): "
            + "; ".join(parts) + ". The case study states no concurrency for the EP8 figure; the table assumes "
            "128.") if parts else ""


WHY = (("nvidia/Kimi-K2.5-NVFP4", Plan(tp=8)), ("MiniMaxAI/MiniMax-M2.5", Plan(tp=4)))


def why() -> list[str]:
    """The one-user decode step of each case-study model by mechanism, under the shipped terms."""
    hw = load_profile("rtx-pro-6000-server")
    terms = terms_for(hw, "vllm")[0]
    lines = ["| Model | Plan | step ms | dense GEMMs | MoE chain | attention | allreduce "
             "| fixed (per layer, per step) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for model, plan in WHY:
        entry = lookup(model)
        assert entry is not None
        case = make_case(entry.arch, plan, hw, Settings())
        mech = evaluate([case], terms, np.array([1]), np.array([ASSUMED_INPUT_LEN]),
                        np.array([512])).at(0, 1).mechanism_ms
        total = sum(mech.values())
        shares = " | ".join(f"{mech[k]:.2f} ({mech[k] / total:.0%})"
                            for k in ("gemm", "moe", "attention", "collectives", "fixed"))
        lines.append(f"| {model} | {plan.label()} | {total:.2f} | {shares} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?", default=str(CSV), help="measurement CSV (the columns of `advisor check --help`)")
    ap.add_argument("--update", type=Path, nargs="?", const=home("case-study"), metavar="FILE",
                    help="replace the case-study block of FILE (default: docs/accuracy.md)")
    args = ap.parse_args(argv)
    try:
        data = read_measurements(args.csv)
        lines = table(data.rows, held_out_terms())
        why_lines = why()
        users = users_line(data.rows)
    except AdvisorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    note = (f"Predicted: uncalibrated (Terms() priors); Calibrated: the shipped vLLM terms for this GPU, pooled "
            f"over every vLLM row, these included (in-sample); Held out: the vLLM terms pooled without any RTX PRO "
            f"6000 row, as for a GPU nobody measured. vLLM defaults. "
            f"* input length not in the CSV: {ASSUMED_INPUT_LEN} assumed; output length {DEFAULT_OUTPUT_LEN} "
            f"where the CSV gives none.")
    why_note = ("Why, at one user (decode step at 1024 tokens of context, shipped terms; ms and share of the step): "
                "each mechanism's kernel model is fitted to measured kernels on seven GPUs, the RTX PRO 6000 "
                "among them (`advisor/cost/kernel_params.json`); allreduce is vLLM's collectives at this box's "
                "measured NCCL times; fixed is what the kernels do not explain (the fitted per-layer and per-step "
                "terms).")
    text = "\n".join(lines) + "\n\n" + note + "\n\n" + users + "\n\n" + why_note + "\n\n" + "\n".join(why_lines)
    print(text)
    if args.update:
        replace_block(args.update, "case-study", text)
    for bad in data.rejected:
        print(f"skipped row {bad.row}: {bad.reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
