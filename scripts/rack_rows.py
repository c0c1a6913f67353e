"""The rack-scale rows (`tests/data/bench/rack_disagg_ids.txt`: 42 GB200 NVL72 DeepSeek-R1 runs, disaggregated, in
`silicon_disagg_dev.csv`) predicted at their own pools with the GPU held out: each engine's terms refitted without
the row's GPU and its HGX twin (GB200 with B200, GB300 with B300: the same silicon), so nothing of that chip's
serving rows informs them (`calibrate/pooled.py` on the rows of scripts/refit_calibrations.py).

    python -m scripts.rack_rows          # markdown: rows, summary, signed bias by concurrency band

What each row deployed is the bench README's ("Rack-scale rows"). SGLang's GB200 recipe (ai-dynamo/dynamo
`components/backends/sglang/slurm_jobs/scripts/gb200-fp8.sh`) runs `--ep-num-redundant-experts 32` on both sides:
256 experts in 288 slots (EPLB's redundant copies), so DEP48 holds 6 slots a GPU and DEP24 12. The rows carry it
(`*_redundant_experts`, research/disagg_recipes.py) and the predictor models it (`arch/redundant.py`): 288 experts,
each slot a whole expert's weights, routing uniform over them. Its `--enable-deepep-moe` (DeepEP across the rack's
trays, low-latency mode on both sides) likewise: the rows carry `*_moe_a2a` deepep and the exchange is DeepEP's
all-to-all over the rack's NVLink (`Settings.moe_a2a_backend`, `cost/collectives.py`), not SGLang's default
all-gather / reduce-scatter.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from advisor.arch.model import ModelArch
from advisor.calibrate.disagg_predict import BANDS, DisaggRow, band_of, predict_one
from advisor.cost.terms import Terms
from advisor.hardware import HardwareProfile

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "tests" / "data" / "bench"
TWIN = {"gb200": "b200-sxm", "gb300": "b300-sxm"}  # held out together: the same GPU on an HGX board


def rack_ids() -> list[str]:
    text = (BENCH / "rack_disagg_ids.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def rack_rows() -> list[dict[str, str]]:
    """The 42 rows, in the ids' order (each row's `source` ends with its id)."""
    with open(BENCH / "silicon_disagg_dev.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    by_id = {r["source"].rsplit("id=", 1)[-1]: r for r in rows}
    return [by_id[i] for i in rack_ids()]


def held_out_terms(engines: set[str], hardware: set[str]) -> Callable[[HardwareProfile, str], Terms]:
    """Terms of (GPU, engine) fitted on every row of scripts/refit_calibrations.py except those of `hardware` and
    their HGX twins (one pooled fit per engine and held-out group; a GPU it never saw gets the engine-wide terms
    and its own spec sheet)."""
    from advisor.calibrate.pooled import PooledCalibrator
    from advisor.calibrate.predict_table import prepare
    from advisor.calibrate.rowtable import read_measurements
    from scripts.refit_calibrations import files

    rows = [r for f in files(BENCH) for r in read_measurements(f).rows]
    _, buckets = prepare(rows)
    fits = {}
    for hw in sorted(hardware):
        out = {hw, TWIN.get(hw, hw)}
        for e in sorted(engines):
            fits[hw, e] = PooledCalibrator().fit({k: b for k, b in buckets.items() if k[1] == e and k[0] not in out})
    return lambda hw, engine: fits[hw.id, engine].terms_for(hw.id)


@dataclass(frozen=True)
class RackResult:
    rows: list[DisaggRow]

    @property
    def predicted(self) -> list[DisaggRow]:
        return [r for r in self.rows if r.predicted is not None]


def predict(terms_for: Callable[[HardwareProfile, str], Terms] | None = None) -> RackResult:
    """Every rack row at its own pools (`calibrate/disagg_predict.py: predict_one`), under `terms_for` (default:
    held out by GPU); SGLang's with the 32 redundant experts its rows carry."""
    rows = rack_rows()
    if terms_for is None:
        todo = [r for r in rows if not (r.get("spec_decoding") or "none") != "none"]
        terms_for = held_out_terms({r["engine"] for r in todo}, {r["hardware"] for r in todo})
    archs: dict[str, ModelArch] = {}
    return RackResult([predict_one(r, terms_for, archs) for r in rows])


def _med(xs: list[float]) -> str:
    return f"{np.median(np.abs(xs)):.1f}%" if xs else "-"


def _signed(xs: list[float]) -> str:
    return f"{np.median(xs):+.1f}%" if xs else "-"


def _errors(rows: list[DisaggRow], metric: str) -> list[float]:
    """Signed % errors of `metric` over the rows that have one."""
    return [e for r in rows if (e := r.error_pct(metric)) is not None]


def summary_lines(res: RackResult) -> list[str]:
    """Median |error| and signed median of TPOT and TTFT, by engine and overall, and by concurrency band."""
    lines = ["| rows | predicted | TPOT median abs | TPOT signed | TTFT median abs | TTFT signed |",
             "|---|---:|---:|---:|---:|---:|"]
    groups = [(f"{e} ({n})", [r for r in res.predicted if r.engine == e]) for e, n in
              (("trtllm", "TensorRT-LLM"), ("sglang", "SGLang"))] + [("all", res.predicted)]
    for label, rs in groups:
        tp, tt = _errors(rs, "tpot_ms"), _errors(rs, "ttft_ms")
        lines.append(f"| {label} | {len(rs)} | {_med(tp)} | {_signed(tp)} | {_med(tt)} | {_signed(tt)} |")
    lines += ["", "| users | rows | TPOT signed | TTFT signed | TPOT median abs | TTFT median abs |",
              "|---|---:|---:|---:|---:|---:|"]
    for *_, band in BANDS:
        rs = [r for r in res.predicted if band_of(r.concurrency) == band]
        if rs:
            tp, tt = _errors(rs, "tpot_ms"), _errors(rs, "ttft_ms")
            lines.append(f"| {band} | {len(rs)} | {_signed(tp)} | {_signed(tt)} | {_med(tp)} | {_med(tt)} |")
    return lines


def row_lines(res: RackResult) -> list[str]:
    """One line per row: deployment, users, measured and predicted TTFT/TPOT, or why not predicted."""
    lines = ["| row | engine | deployment | users | TTFT ms meas / pred | TPOT ms meas / pred | TPOT err |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in res.rows:
        rid = r.source.rsplit("_", 1)[-1]
        tag = f"{r.input_len // 1024}k/{r.output_len // 1024}k #{rid}"
        if r.predicted is None:
            why = (r.reason or "").split(";")[0]
            lines.append(f"| {tag} | {r.engine} | {r.deployment or '-'} | {r.concurrency} | not predicted: {why} "
                         "| | |")
            continue
        m, p = r.measured, r.predicted
        lines.append(f"| {tag} | {r.engine} | {r.deployment} | {r.concurrency} | {m['ttft_ms']:.0f} / "
                     f"{p['ttft_ms']:.0f} | {m['tpot_ms']:.2f} / {p['tpot_ms']:.2f} | "
                     f"{r.error_pct('tpot_ms'):+.1f}% |")
    return lines


def main() -> int:
    res = predict()
    print("\n".join(summary_lines(res) + [""] + row_lines(res)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
