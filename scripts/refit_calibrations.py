"""Regenerate the shipped calibrations (advisor/calibrations/<engine>.json) from the measurements in the repo,
with the held-out errors a user's question implies.

    python -m scripts.refit_calibrations [BENCH_DIR]   (default tests/data/bench)

23 min on the 2-CPU development box (2026-12), the held-out groups fitted in parallel, one process per CPU
(44 min in one). The fit is reproducible on one machine, not across them: on this box the shipped terms of
2026-12-06 refit from the same commit moved by up to 0.1% (vLLM) to 11% (TensorRT-LLM's per-request time).

Rows: silicon_dev.csv, the case study (advisor/examples/case_study.csv) and the cleaned public rows
(public_clean.csv). Per engine, one pooled fit over every GPU (`advisor/calibrate/pooled.py`). Then, for
the README and the intervals:
- leave-one-model-out: every model predicted by terms fitted without it (all engines refitted per model; models
  whose architectures differ only in name, DeepSeek-R1 and -V3, are one: `research/splits.py: group_of`);
- leave-one-hardware-out: every GPU predicted by its engine's pooled terms fitted without it, i.e. the
  engine-wide terms and its own spec sheet;
- the 80% interval is the 10th-90th percentile of the leave-one-model-out signed errors; its coverage is
  measured the same way it is used: for each model, the interval from the other models' residuals, and the
  share of that model's rows inside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from advisor.calibrate.pooled import METHOD, PooledCalibrator
from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements
from advisor.calibrate.store import SHIPPED, HardwareFit, PooledFit
from advisor.errors import AdvisorError
from advisor.files import write_atomic
from research.splits import HeldOut, group_of, held_out, pooled_fitter, summarize

REPO = Path(__file__).resolve().parents[1]

INTERVAL = (10, 90)  # percentiles of the signed held-out errors: an 80% interval
METRICS = ("tpot_ms", "ttft_ms")


def files(bench: Path) -> list[Path]:
    return [bench / "silicon_dev.csv", REPO / "advisor" / "examples" / "case_study.csv", bench / "public_clean.csv"]


def spread(errors: list[float]) -> tuple[float, float]:
    lo, hi = np.percentile(errors, INTERVAL)
    return round(float(lo), 2), round(float(hi), 2)


def inside(err: float, band: tuple[float, float]) -> bool:
    return band[0] <= err <= band[1]


def coverage(rows: list[HeldOut], metric: str) -> float | None:
    """Share of rows inside the interval built from the other models' residuals (nested: honest)."""
    errs = [(group_of(r.row, r.key, "model"), e) for r in rows if (e := r.error_pct(metric)) is not None]
    hits = []
    for model in sorted({m for m, _ in errs}):
        others = [e for m, e in errs if m != model]
        if len(others) < 10:
            continue
        band = spread(others)
        hits += [inside(e, band) for m, e in errs if m == model]
    return round(100 * float(np.mean(hits)), 1) if hits else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", nargs="?", type=Path, default=REPO / "tests" / "data" / "bench",
                    help="folder with silicon_dev.csv and public_clean.csv (default: tests/data/bench)")
    srcs = files(ap.parse_args().bench)
    try:
        rows = [r for f in srcs for r in read_measurements(f).rows]
    except AdvisorError as err:
        print(f"refit_calibrations: {err}", file=sys.stderr)
        return 2
    preds, buckets = prepare(rows)
    workers = os.cpu_count() or 1  # one fit per held-out group, in parallel
    lomo = held_out(buckets, "model", pooled_fitter(), workers)
    print("leave-one-model-out done", flush=True)
    loho = held_out(buckets, "hardware", pooled_fitter(), workers)
    print("leave-one-hardware-out done", flush=True)
    SHIPPED.mkdir(parents=True, exist_ok=True)
    for engine in sorted({k[1] for k in buckets}):
        mine = {k: b for k, b in buckets.items() if k[1] == engine}
        fit = PooledCalibrator().fit(mine)
        e_lomo = [r for r in lomo if r.key[1] == engine]
        e_loho = [r for r in loho if r.key[1] == engine]
        residual = {m: spread(errs) for m in METRICS
                    if len(errs := [e for r in e_lomo if (e := r.error_pct(m)) is not None]) >= 10}
        cover = {m: c for m in METRICS if (c := coverage(e_lomo, m)) is not None}
        doc = PooledFit(
            engine=engine, engine_wide=fit.global_,
            hardware={hw: HardwareFit(terms=fit.per_hardware_[hw], rows=fit.rows_[hw],
                                      deviations={k: round(v, 4) for k, v in fit.deviations_[hw].items()},
                                      set_aside=fit.set_aside_.get(hw, []))
                      for hw in fit.per_hardware_},
            refused=fit.refused_, bounds_hit=fit.bounds_hit_, files=[f.name for f in srcs], method=METHOD,
            splits={"model": summarize(e_lomo), "hardware": summarize(e_loho)},
            residual_pct=residual, coverage=cover)
        write_atomic(SHIPPED / f"{engine}.json", doc.model_dump_json(indent=1) + "\n")
        for hw, why in fit.set_aside_.items():
            print(f"{engine} {hw}: left out of the fit: {'; '.join(why)}", flush=True)
        print(engine, {k: round(v, 3) for k, v in fit.global_.model_dump().items()}, "bounds hit", fit.bounds_hit_,
              "interval", residual, "coverage", cover, flush=True)
    # every engine together, the same summary as notebooks/data/held_out_before.json (the model before)
    both = {"model": summarize(lomo), "hardware": summarize(loho)}
    write_atomic(REPO / "notebooks" / "data" / "held_out_after.json", json.dumps(both, indent=1) + "\n")
    unpredicted = [p for p in preds if p.reason]
    print(f"{len(rows)} rows, {len(unpredicted)} not predicted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
