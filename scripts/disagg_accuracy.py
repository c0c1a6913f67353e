"""The disaggregated rows of docs/accuracy.md: `tests/data/bench/silicon_disagg_dev.csv` predicted at their own pools
(`advisor/calibrate/disagg_predict.py`) with the terms fitted on aggregated rows, held out as the aggregated rows
are: by hardware (each GPU group's terms fitted without any aggregated row of it: B200 with GB200, B300 with GB300,
H100) and by model (without any aggregated row of its family: DeepSeek-R1 and -V3 together, a checkpoint and its
quantized exports together), and under the shipped calibration; and the verdict, disaggregate or not, measured
against predicted (`scripts/disagg_verdicts.py`). Nothing is fitted on the disaggregated rows.

    python -m scripts.disagg_accuracy --refit             # predict again: the held-out fits (pooled per engine,
                                                          # `research/splits.py: pooled_fitter`), one forked process
                                                          # per CPU: 6 min on 2 cores; writes tests/data/bench/
                                                          # disagg_held_out.csv and disagg_verdicts.csv
    python -m scripts.disagg_accuracy [--update [FILE]]   # the block from those files (FILE: docs/accuracy.md)
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from advisor.calibrate.disagg_predict import (
    BANDS,
    DisaggRow,
    _ordered,
    _reason_kind,
    _table,
    band_of,
    predict_disagg_rows,
    summary,
)
from scripts.readme_block import REPO, home, replace_block

BENCH = REPO / "tests" / "data" / "bench"
DISAGG = BENCH / "silicon_disagg_dev.csv"
HELD_OUT = BENCH / "disagg_held_out.csv"
VERDICTS = BENCH / "disagg_verdicts.csv"
HW_GROUPS: tuple[tuple[str, ...], ...] = (("b200-sxm", "gb200"), ("b300-sxm", "gb300"), ("h100-sxm",))
COLUMNS = ("split", "group", "row", "source", "model", "hardware", "engine", "weight_dtype", "plan_status",
           "concurrency", "input_len", "output_len", "gpus", "ttft_ms", "tpot_ms", "ttft_pred", "tpot_pred", "reason")
VERDICT_COLUMNS = ("family", "hardware", "engine", "weights", "input_len", "output_len", "source", "x_meas",
                   "y_meas", "agg_meas", "x_pred", "y_pred", "agg_pred")
SPLITS = {"hardware": "held out by hardware", "model": "held out by model", "shipped": "shipped calibration"}



def _constant(name: str) -> Callable[[Any], str]:
    """A grouping that puts every row in one group, `name`."""
    return lambda _row: name

def _gpus(r: DisaggRow) -> int:
    return sum(p["workers"] * p["tp"] * p["pp"] * p["dp"] for p in r.pools.values())


def _record(split: str, group: str, r: DisaggRow, raw: dict[str, str]) -> dict[str, Any]:
    pred = r.predicted or {}
    return {"split": split, "group": group, "row": r.row, "source": r.source, "model": r.model,
            "hardware": r.hardware, "engine": r.engine, "weight_dtype": raw.get("weight_dtype", ""),
            "plan_status": r.plan_status, "concurrency": r.concurrency, "input_len": r.input_len,
            "output_len": r.output_len, "gpus": _gpus(r), "ttft_ms": r.measured.get("ttft_ms", ""),
            "tpot_ms": r.measured.get("tpot_ms", ""), "ttft_pred": pred.get("ttft_ms", ""),
            "tpot_pred": pred.get("tpot_ms", ""), "reason": r.reason or ""}


def _held_out_group(group: tuple[Any, ...], buckets: dict[Any, Any], raw: dict[int, dict[str, str]]
                    ) -> list[dict[str, Any]]:
    """The rows of one held-out group (`refit`), predicted by the pooled terms fitted without it."""
    from advisor.calibrate.base import subset
    from research.splits import pooled_fitter

    split, name, mine, held = group
    engines = {r.get("engine") or "vllm" for r in raw.values() if mine(r)}
    train = {}
    for k, b in buckets.items():
        keep = [j for j, row in enumerate(b.rows) if not held(row.model, k[0])]
        if k[1] in engines and keep:
            train[k] = subset(b, np.asarray(keep))
    terms_for = pooled_fitter()(train)

    def held_terms(hw: Any, e: str) -> Any:
        return terms_for((hw.id, e))

    rows = predict_disagg_rows(DISAGG, held_terms, only=mine)
    print(f"{split} {name}: {sum(r.predicted is not None for r in rows)} of {len(rows)} predicted", flush=True)
    return [_record(split, name, r, raw[r.row]) for r in rows]


def refit() -> None:
    """Predict every row under each split and write the two CSVs (module docstring)."""
    from advisor.calibrate.predict_table import prepare
    from advisor.calibrate.rowtable import read_measurements
    from research.forked import fork_map
    from scripts.disagg_verdicts import families
    from scripts.refit_calibrations import files

    raw = {n: r for n, r in enumerate(csv.DictReader(open(DISAGG, newline="", encoding="utf-8")), start=1)}
    agg = [r for f in files(BENCH) for r in read_measurements(f).rows]
    _, buckets = prepare(agg)
    fam = families({r.model for r in agg} | {r["model"] for r in raw.values()})
    out = [_record("shipped", "all", r, raw[r.row]) for r in predict_disagg_rows(DISAGG)]
    groups = [("hardware", "+".join(g), lambda row, g=g: row["hardware"] in g, lambda m, hw, g=g: hw in g)
              for g in HW_GROUPS]
    groups += [("model", f, lambda row, f=f: fam[row["model"]] == f, lambda m, hw, f=f: fam[m] == f)
               for f in sorted({fam[r["model"]] for r in raw.values()})]
    # each group's fit is independent; indices go to the workers (the groups hold closures, which do not pickle)
    for part in fork_map(lambda i: _held_out_group(groups[i], buckets, raw), range(len(groups))):
        out += part
    _write(HELD_OUT, COLUMNS, out)
    _write(VERDICTS, VERDICT_COLUMNS, _verdict_records(out, agg_path=BENCH / "silicon_dev.csv", fam=fam))


def _verdict_records(out: list[dict[str, Any]], agg_path: Path, fam: dict[str, str]) -> list[dict[str, Any]]:
    from scripts.disagg_verdicts import Point, aggregated_points, cases, closed_loop, weight_format

    points = []
    for r in out:
        if r["split"] != "shipped" or r["ttft_pred"] == "" or r["ttft_ms"] == "" or r["tpot_ms"] == "" or \
                r["reason"]:
            continue
        args = (float(r["concurrency"]), float(r["output_len"]))
        xm, ym = closed_loop(*args, float(r["ttft_ms"]), float(r["tpot_ms"]), float(r["gpus"]))
        xp, yp = closed_loop(*args, float(r["ttft_pred"]), float(r["tpot_pred"]), float(r["gpus"]))
        key = (fam[r["model"]], r["hardware"], r["engine"], weight_format(r["model"], r["weight_dtype"] or None),
               int(r["input_len"]), int(r["output_len"]))
        points.append(Point(key, xm, ym, xp, yp, r["source"]))
    found = cases(aggregated_points(agg_path, fam), points)
    return [{"family": c.point.key[0], "hardware": c.point.key[1], "engine": c.point.key[2],
             "weights": c.point.key[3], "input_len": c.point.key[4], "output_len": c.point.key[5],
             "source": c.point.source, "x_meas": c.point.x_meas, "y_meas": c.point.y_meas, "agg_meas": c.agg_meas,
             "x_pred": c.point.x_pred, "y_pred": c.point.y_pred, "agg_pred": c.agg_pred} for c in found]


def _write(path: Path, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    from advisor.files import atomic_output

    with atomic_output(path, "w") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in r.items()})


def rows_of(split: str) -> list[DisaggRow]:
    """The stored predictions of one split as `DisaggRow`s."""
    out = []
    with open(HELD_OUT, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["split"] != split:
                continue
            meas = {m: float(r[m]) for m in ("ttft_ms", "tpot_ms") if r[m]}
            pred = {m: float(r[f"{m[:4]}_pred"]) for m in ("ttft_ms", "tpot_ms")} if r["ttft_pred"] else None
            out.append(DisaggRow(source=r["source"], model=r["model"], hardware=r["hardware"], engine=r["engine"],
                                 plan_status=r["plan_status"], concurrency=int(r["concurrency"]),
                                 input_len=int(r["input_len"]), output_len=int(r["output_len"]), measured=meas,
                                 predicted=pred, reason=r["reason"] or None, row=int(r["row"])))
    return out


def _not_predicted(rows: list[DisaggRow]) -> list[str]:
    runs = [r for r in rows if not (r.reason or "").startswith("a repeat")]
    kinds: dict[str, int] = {}
    for r in runs:
        if r.reason:
            kinds[_reason_kind(r.reason)] = kinds.get(_reason_kind(r.reason), 0) + 1
    done = sum(r.predicted is not None for r in runs)
    return [f"{done} of {len(runs)} distinct runs predicted ({len(rows) - len(runs)} repeats counted once; "
            f"{100 * done / len(runs):.0f}%); not predicted:", "",
            *[f"- {n}: {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]]


def render() -> str:
    """The block (module docstring), from the stored CSVs."""
    from scripts.disagg_verdicts import Case, Point, verdict_table

    shipped = rows_of("shipped")
    lines = ["Measured disaggregated runs (`tests/data/bench/silicon_disagg_dev.csv`) predicted at their own pools "
             "(`advisor check` of the file), as their closed-loop benchmark measured them; nothing is fitted on "
             "them. Generated by `python -m scripts.disagg_accuracy` from `tests/data/bench/disagg_held_out.csv` "
             "(its `--refit` predicts again). **Held out by hardware**: each row's terms fitted on aggregated rows "
             "without its GPU group (B200 with GB200, B300 with GB300, H100); **held out by model**: without its "
             "model's family (DeepSeek-R1 and -V3 together). Errors 100 (predicted - measured) / measured, medians; "
             "\"recorded\" rows carry the source's worker counts, \"recovered\" ones counts found from the "
             "InferenceX configurations (tests/data/bench/README.md). Targets: TPOT median |error| <= 12%, TTFT <= "
             "25%, signed median within +/-10% in every concurrency band.", "", *_not_predicted(shipped), "",
             "| terms | rows | TTFT median abs | TTFT median signed | TPOT median abs | TPOT median signed |",
             "|---|---:|---:|---:|---:|---:|"]
    for split, name in SPLITS.items():
        lines += _table(name, summary([r for r in rows_of(split) if r.predicted], _constant(name)))[2:]
    for split in ("hardware", "model"):
        done = [r for r in rows_of(split) if r.predicted is not None]
        lines += ["", f"{SPLITS[split].capitalize()}:", "",
                  *_table("worker counts", summary(done, lambda r: r.plan_status)), "",
                  *_table("hardware/engine", summary(done, lambda r: f"{r.hardware}/{r.engine}")), "",
                  *_table("users", _ordered(summary(done, lambda r: band_of(r.concurrency))))]
    cases = []
    with open(VERDICTS, newline="", encoding="utf-8") as fh:
        for v in csv.DictReader(fh):
            key = (v["family"], v["hardware"], v["engine"], v["weights"], int(v["input_len"]), int(v["output_len"]))
            p = Point(key, float(v["x_meas"]), float(v["y_meas"]), float(v["x_pred"]), float(v["y_pred"]),
                      v["source"])
            cases.append(Case(p, float(v["agg_meas"]), float(v["agg_pred"])))
    lines += ["", "Disaggregate or not, at matched per-user speed (`scripts/disagg_verdicts.py`: the same model, GPU, "
              "engine, weights and lengths measured both ways; a disaggregated run against the most output tok/s "
              "per GPU of an aggregated run at least as fast per user, closed loop: concurrency x output / (TTFT + "
              "(output - 1) x TPOT) / GPUs; predicted under the shipped calibration):", "", *verdict_table(cases)]
    assert [b[2] for b in BANDS][-1] == ">256"
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refit", action="store_true", help="predict every row again (slow) and write the CSVs")
    ap.add_argument("--update", nargs="?", const=str(home("disagg-accuracy")), default=None, metavar="FILE",
                    help="write the block into FILE (default docs/accuracy.md)")
    args = ap.parse_args(argv)
    if args.refit:
        refit()
    text = render()
    print(text)
    if args.update:
        replace_block(Path(args.update), "disagg-accuracy", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
