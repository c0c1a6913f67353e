"""Measured disaggregated runs (`tests/data/bench/silicon_disagg_dev.csv`, columns in `calibrate/disagg_columns.py`)
predicted at their own pools, as their benchmark measured them (`cost/disagg_predict.py: predict_disagg`,
benchmark=True), under each engine's shipped calibration for the row's GPU: nothing is fitted on these rows.

A row becomes x prefill workers and y decode workers of the plans its cells give (attention TP, attention DP, PP; the
MoE's EP, `disagg_columns`), on as many nodes of its hardware as it records (`nodes`: an NVL72 rack holds 18 trays,
several 8-GPU nodes join over the profile's first fabric), with its concurrency and lengths. Rows that cannot be
predicted say why: an unsettled deployment, a repeat of another row (counted once), speculative decoding (no run
records its acceptance, as for aggregated rows: `calibrate/predict_rows.py: _speculation_reason`), an unknown model
or GPU, a refused deployment. The engine release a row names is not modelled separately (as for aggregated rows,
the newest modelled one runs).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from advisor.arch.model import ModelArch
from advisor.calibrate.disagg_columns import READ_REQUIRED
from advisor.calibrate.predict_rows import requantized_kv_dtype
from advisor.calibrate.predict_table import mean_lengths
from advisor.cost.plan import Plan
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile, load_profile

# Concurrency bands of the signed bias: the project's (`calibrate/splits.py: BANDS`) with >256 split off
BANDS: tuple[tuple[int, float, str], ...] = ((1, 4, "1-4"), (5, 16, "5-16"), (17, 64, "17-64"),
                                             (65, 256, "65-256"), (257, float("inf"), ">256"))
TermsFor = Callable[[HardwareProfile, str], Terms]
MISSING_SIDE = "missing the"  # a row that lacks one pool: "missing the decode pool: ..."


@dataclass(frozen=True)
class DisaggRow:
    """One measured row with its prediction (None where it cannot be made, with the reason)."""

    source: str
    model: str
    hardware: str
    engine: str
    plan_status: str  # recorded | recovered | unsettled
    concurrency: int
    input_len: int
    output_len: int
    measured: dict[str, float]
    predicted: dict[str, float] | None = None
    reason: str | None = None
    deployment: str = ""
    notes: tuple[str, ...] = ()
    file: str = ""
    row: int = 0  # 1-based data row of the file
    pools: dict[str, dict[str, int]] = field(default_factory=dict)  # side -> workers, tp, pp, dp, ep

    def error_pct(self, metric: str) -> float | None:
        """Signed 100 (predicted - measured) / measured, or None."""
        if self.predicted is None or metric not in self.measured or self.measured[metric] <= 0:
            return None
        return 100 * (self.predicted[metric] - self.measured[metric]) / self.measured[metric]


def read_rows(path: Path) -> list[dict[str, str]]:
    """The CSV's rows; one line (AdvisorError) when it lacks a column every row needs (`READ_REQUIRED`: a
    disaggregated row gives both pools)."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise AdvisorError(f"{path}: {getattr(err, 'strerror', None) or err}") from err
    missing = [c for c in READ_REQUIRED if c not in header]
    if missing:
        side = next((s for s in ("prefill", "decode") if missing[0].startswith(s)), None)
        why = f" (a disaggregated row gives both pools: the {side} pool's cells are missing)" if side else ""
        raise AdvisorError(f"{path}: not a disaggregated measurement file: no column {missing[0]}{why}")
    return rows


def is_disagg_file(path: str | Path) -> bool:
    """Whether a measurement file is in the disaggregated schema: a CSV whose header names a pool's cells."""
    if str(path).lower().endswith(".json"):
        return False
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return any(c.strip().startswith(("prefill_", "decode_")) for c in header)


def _ratio(row: dict[str, str]) -> float:
    """The row's `length_ratio` (nan: not known); ValueError outside (0, 1], as the aggregated schema's."""
    v = (row.get("length_ratio") or "").strip()
    ratio = float(v) if v else float("nan")
    if not 0 < ratio <= 1 and v:
        raise ValueError(f"length_ratio {v}: a share of the stated lengths, in (0, 1]")
    return ratio


def _recv_interval(row: dict[str, str]) -> int:
    """The decode workers' `decode_recv_interval` (empty: 1); ValueError below 1, as the aggregated schema's."""
    n = _int(row, "decode_recv_interval", 1)
    if n < 1:
        raise ValueError(f"decode_recv_interval {n}: scheduler iterations between looks for requests, at least 1")
    return n


def _int(row: dict[str, str], key: str, default: int = 0) -> int:
    v = (row.get(key) or "").strip()
    return int(float(v)) if v else default


def side_plan(row: dict[str, str], side: str) -> Plan:
    """One side's worker plan from its cells: attention TP x attention DP x PP GPUs, experts over moe_ep of them
    (none stated: no EP, the engines' default)."""
    tp, dp, pp = (max(_int(row, f"{side}_{k}", 1), 1) for k in ("tp", "attention_dp", "pp"))
    return Plan(tp=tp, pp=pp, dp=dp, ep=max(_int(row, f"{side}_moe_ep", 1), 1))


def side_setup(row: dict[str, str], side: str, arch: ModelArch, settings: Settings) -> tuple[ModelArch, Settings]:
    """One side's model and flags as its recipe ran them: the `<side>_redundant_experts` slots beside the experts
    (`arch/redundant.py`, the one owner of that rule), the `<side>_mem_fraction` (the engine's memory share;
    empty: its default), the `<side>_moe_a2a` (deepep: DeepEP's all-to-all, `Settings.moe_a2a_backend`) and the
    `<side>_max_batch` (the most requests a rank admits, `Settings.max_num_seqs`; empty: the engine's default)."""
    from advisor.arch.redundant import redundant_experts

    flags: dict[str, object] = {}
    if frac := (row.get(f"{side}_mem_fraction") or "").strip():
        flags["gpu_memory_utilization"] = frac
    if most := _int(row, f"{side}_max_batch"):
        flags["max_num_seqs"] = most
    if (row.get(f"{side}_moe_a2a") or "").strip() == "deepep":
        flags["moe_a2a_backend"] = "deepep"
    s = Settings.model_validate({**settings.model_dump(exclude_unset=True), **flags}) if flags else settings
    return redundant_experts(arch, _int(row, f"{side}_redundant_experts")), s


def _skip(row: dict[str, str]) -> str | None:
    """Why a row is not predicted before its model is read, or None."""
    if row.get("repeat_of"):
        return f"a repeat of {row['repeat_of']} (the same run, counted once)"
    if row.get("plan_status") == "unsettled":
        return f"deployment not settled: {row.get('unsettled_reason') or 'no reason given'}"
    if (row.get("spec_decoding") or "none") != "none" or _int(row, "spec_tokens") > 0:
        return ("measured with speculative decoding; the run's acceptance length is not recorded (a published one "
                "holds only for its own prompts)")
    for side in ("prefill", "decode"):
        if _int(row, f"{side}_workers") < 1:
            return f"{MISSING_SIDE} {side} pool: no {side}_workers recorded"
    if _int(row, "concurrency") < 1:
        return "concurrency not recorded (the benchmark's users are the load every prediction is made at)"
    return None


def _base(row: dict[str, str], where: tuple[str, int]) -> DisaggRow:
    """The row's conditions and measured values (ValueError: a cell that is not a number)."""
    pools = {side: {k: _int(row, f"{side}_{c}", 1 if k != "workers" else 0) for k, c in
                    (("workers", "workers"), ("tp", "tp"), ("pp", "pp"), ("dp", "attention_dp"), ("ep", "moe_ep"))}
             for side in ("prefill", "decode")}
    return DisaggRow(source=row.get("source") or f"{Path(where[0]).name} row {where[1]}", model=row.get("model", ""),
                     hardware=row.get("hardware", ""), engine=row.get("engine") or "vllm",
                     plan_status=row.get("plan_status") or "recorded", concurrency=_int(row, "concurrency"),
                     input_len=_int(row, "input_len"), output_len=_int(row, "output_len"),
                     measured={m: float(row[m]) for m in ("ttft_ms", "tpot_ms") if (row.get(m) or "").strip()},
                     file=where[0], row=where[1], pools=pools)


def _nodes(row: dict[str, str], hw: HardwareProfile, d_gpus: int) -> int:
    """The row's nodes, or as many as its pools need when it does not say."""
    return _int(row, "nodes") or max(-(-d_gpus // hw.topology.num_gpus), 1)


def predict_one(row: dict[str, str], terms_for: TermsFor, archs: dict[str, ModelArch],
                where: tuple[str, int] = ("", 0)) -> DisaggRow:
    """One row predicted at its own pools (module docstring); `where`: its file and 1-based data row."""
    from advisor.cost.disagg import make_disagg
    from advisor.cost.disagg_predict import predict_disagg
    from advisor.cost.sweep import make_case
    from advisor.hardware.cluster import load_cluster
    from advisor.resolve import resolve

    try:
        base = _base(row, where)
        ratio = _ratio(row)
        recv = _recv_interval(row)
    except ValueError as err:
        return DisaggRow(source=row.get("source") or f"{Path(where[0]).name} row {where[1]}",
                         model=row.get("model", ""), hardware=row.get("hardware", ""), engine=row.get("engine", ""),
                         plan_status=row.get("plan_status", ""), concurrency=0, input_len=0, output_len=0,
                         measured={}, reason=f"unreadable cell: {err}", file=where[0], row=where[1])
    if not base.model or not base.hardware:
        return _with(base, reason=f"no {'model' if not base.model else 'hardware'} given")
    if (why := _skip(row)) is not None:
        return _with(base, reason=why)
    if "spec_decoding" in row and not row.get("spec_decoding"):
        base = _with(base, notes=("speculative decoding not recorded: predicted without",))
    try:
        if base.model not in archs:
            archs[base.model] = resolve(base.model).arch
        arch = archs[base.model]
        hw = load_profile(base.hardware)
        wd = row.get("weight_dtype") or None
        s = Settings.model_validate({"engine": base.engine, "weight_dtype": wd,
                                     "max_model_len": base.input_len + base.output_len,
                                     "kv_cache_dtype": requantized_kv_dtype(wd, arch.weight_dtype)})
        pre, dec = side_plan(row, "prefill"), side_plan(row, "decode")
        x, y = _int(row, "prefill_workers"), _int(row, "decode_workers")
        cluster = load_cluster(hw, _nodes(row, hw, x * pre.gpus + y * dec.gpus))
        multi = cluster if cluster.multi_node else None
        (pa, ps), (da, ds) = (side_setup(row, side, arch, s) for side in ("prefill", "decode"))
        cases = (make_case(pa, pre, hw, ps, cluster=multi), make_case(da, dec, hw, ds, cluster=multi))
        d = make_disagg(arch, hw, pre, x, dec, y, ps, ds, cluster=cluster, cases=cases)
        terms = terms_for(hw, base.engine)
    except (AdvisorError, ValueError) as err:  # pydantic's ValidationError is a ValueError
        return _with(base, reason="cannot build the deployment: " + " ".join(str(err).split()))
    if d.refused:
        return _with(base, reason=d.refused, deployment=d.label())
    # at the mean lengths the benchmark's client drew, to the token (`length_ratio`; the aggregated rows' rule),
    # the case and its memory at the stated ones
    inp, out = (round(float(mean_lengths(np.array([float(n)]), np.array([ratio]))[0]))
                for n in (base.input_len, base.output_len))
    p = predict_disagg(d, terms, max(base.concurrency, 1), inp, out, benchmark=True, recv_interval=recv)
    if p.ttft_ms is None or p.tpot_ms is None or not np.isfinite([p.ttft_ms, p.tpot_ms]).all():
        return _with(base, reason="the cost model returned no finite value", deployment=d.label())
    return _with(base, predicted={"ttft_ms": p.ttft_ms, "tpot_ms": p.tpot_ms, "output_tok_s": p.output_tok_s or 0.0},
                 deployment=d.label())


def _with(r: DisaggRow, **kw: object) -> DisaggRow:
    from dataclasses import replace

    return replace(r, **kw)  # type: ignore[arg-type]


def predict_disagg_rows(path: Path, terms_for: TermsFor | None = None, defaults: dict[str, Any] | None = None,
                        only: Callable[[dict[str, str]], bool] | None = None) -> list[DisaggRow]:
    """Every row of a disaggregated measurement file predicted at its own pools, or with why not. `terms_for`:
    the terms of a (profile, engine) (default: the shipped calibration, `calibrate/store.py: terms_for`);
    `defaults`: model, hardware, engine or concurrency for rows whose cell is empty; `only`: the rows to predict
    (the others are left out)."""
    if terms_for is None:
        from advisor.calibrate.store import terms_for as shipped

        def terms_for(hw: HardwareProfile, engine: str) -> Terms:
            return shipped(hw, engine)[0]

    fill = {k: str(v) for k, v in (defaults or {}).items() if k in ("model", "hardware", "engine", "concurrency")}
    archs: dict[str, ModelArch] = {}
    rows = [{**r, **{k: v for k, v in fill.items() if not (r.get(k) or "").strip()}} for r in read_rows(path)]
    return [predict_one(r, terms_for, archs, (str(path), n)) for n, r in enumerate(rows, start=1)
            if only is None or only(r)]


def band_of(concurrency: int) -> str:
    """The concurrency band of the signed bias ("unknown" below one user)."""
    return next((label for lo, hi, label in BANDS if lo <= concurrency <= hi), "unknown")


def summary(rows: Iterable[DisaggRow], by: Callable[[DisaggRow], str]) -> dict[str, dict[str, float | int | None]]:
    """Per group: rows predicted, median |error| and median signed error (%) of TTFT and TPOT."""
    groups: dict[str, list[DisaggRow]] = {}
    for r in rows:
        if r.predicted is not None:
            groups.setdefault(by(r), []).append(r)
    out: dict[str, dict[str, float | int | None]] = {}
    for g, rs in sorted(groups.items()):
        doc: dict[str, float | int | None] = {"n": len(rs)}
        for m in ("ttft_ms", "tpot_ms"):
            e = np.array([x for x in (r.error_pct(m) for r in rs) if x is not None])
            doc[f"{m[:4]}_median_abs_pct"] = float(np.median(np.abs(e))) if e.size else None
            doc[f"{m[:4]}_median_signed_pct"] = float(np.median(e)) if e.size else None
        out[g] = doc
    return out


def _reason_kind(reason: str) -> str:
    """A reason's kind for counting: its text up to the first colon (a refused side: its plan and why, up to the
    next one)."""
    parts = reason.split(":")
    head = ":".join(parts[:2]) if reason.startswith(("prefill ", "decode ")) else parts[0]
    return head if len(head) < 100 else head[:97] + "..."


def _table(title: str, groups: dict[str, dict[str, float | int | None]]) -> list[str]:
    out = [f"| {title} | rows | TTFT median abs | TTFT median signed | TPOT median abs | TPOT median signed |",
           "|---|---:|---:|---:|---:|---:|"]
    for g, d in groups.items():
        cells = [f"{d[k]:.1f}%" if isinstance(d[k], float) else "-" for k in
                 ("ttft_median_abs_pct", "ttft_median_signed_pct", "tpot_median_abs_pct", "tpot_median_signed_pct")]
        out.append(f"| {g} | {d['n']} | " + " | ".join(cells) + " |")
    return out


def _ordered(groups: dict[str, dict[str, float | int | None]]) -> dict[str, dict[str, float | int | None]]:
    """Concurrency bands in their own order."""
    return {label: groups[label] for *_, label in BANDS if label in groups}


def report(rows: list[DisaggRow]) -> str:
    """Markdown: rows predicted of the distinct runs, why the others are not, and the errors by how the deployment
    was settled, by hardware/engine and by concurrency band."""
    runs = [r for r in rows if not (r.reason or "").startswith("a repeat")]
    done = [r for r in runs if r.predicted is not None]
    kinds: dict[str, int] = {}
    for r in runs:
        if r.reason:
            kinds[_reason_kind(r.reason)] = kinds.get(_reason_kind(r.reason), 0) + 1
    lines = [f"{len(done)} of {len(runs)} distinct runs predicted ({len(rows) - len(runs)} repeats counted once); "
             "not predicted:", ""]
    lines += [f"- {n}: {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])]
    lines += ["", *_table("worker counts", summary(done, lambda r: r.plan_status)), "",
              *_table("hardware/engine", summary(done, lambda r: f"{r.hardware}/{r.engine}")), "",
              *_table("users", _ordered(summary(done, lambda r: band_of(r.concurrency)))), "",
              *_table("all", summary(done, lambda r: "all"))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`python -m advisor.calibrate.disagg_predict FILE`: the report of FILE's rows (bad input: one line, exit 2)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m advisor.calibrate.disagg_predict MEASUREMENTS.csv", file=sys.stderr)
        return 2
    try:
        print(report(predict_disagg_rows(Path(args[0]))))
    except AdvisorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
