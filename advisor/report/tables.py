"""Rich tables for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from advisor.hardware import HardwareProfile
from advisor.report.units import gib


def fit_table(docs: list[dict[str, Any]], hw: HardwareProfile) -> None:
    table = Table(title=f"Memory fit on {hw.name}")
    for col in ("model", "plan", "fits", "weights/GPU", "KV room/GPU", "KV tokens", "max seqs", "why not"):
        table.add_column(col, overflow="fold")
    for d in docs:
        pg = d["per_gpu"] or {}
        table.add_row(d["model"], d["plan"]["label"], "yes" if d["fits"] else "no",
                      gib(pg.get("weights_bytes", 0)), gib(pg.get("kv_cache_bytes", 0)),
                      f"{d['kv_cache_tokens']:,}", f"{d['max_concurrency']:,} x {d['max_model_len']}",
                      d["reason"] or "")
    Console().print(table)


def predict_panel(d: dict[str, Any]) -> None:
    console = Console()
    head = f"{d['model']} on {d['hardware']} at {d['plan']['label']}"
    if not d["fits"]:
        console.print(f"{head}: does not run: {d['reason']}")
        return
    w = d["workload"]
    console.print(f"[bold]{head}[/bold], {w['concurrency']} users, {w['input_len']} in / {w['output_len']} out")
    console.print(f"  TTFT {d['ttft_ms']:,.0f} ms   TPOT {d['tpot_ms']:.1f} ms   {d['per_user_tok_s']:.0f} tok/s per "
                  f"user   {d['output_tok_s']:,.0f} tok/s total ({d['running_sequences']} running)")
    b = d["breakdown_ms"]
    console.print("  decode step: " + ", ".join(f"{k} {v:.2f} ms" for k, v in b.items())
                  + f"  -> bound by {d['bottleneck']}")
    console.print(f"  {d['collectives_per_step']} collectives per step ({d['allreduces_per_step']} allreduces), "
                  f"{d['allreduce_bytes_per_token'] / 1e6:.2f} MB allreduce payload per token")
    pg = d["per_gpu"]
    console.print(f"  per GPU: weights {gib(pg['weights_bytes'])}, KV room {gib(pg['kv_cache_bytes'])} "
                  f"({d['kv_cache_tokens']:,} tokens, {d['kv_cache_dtype']})")
    console.print(f"  calibrated: {calibration_line(d['calibrated'])}")


def rank_table(rows: list[dict[str, Any]], tail: list[dict[str, Any]], hw: HardwareProfile, q: Any) -> None:
    from advisor.report.ranking import compare

    console = Console()
    what = {"latency": "single-user tok/s", "throughput": f"total tok/s at {q.concurrency} users",
            "goodput": "total tok/s within the limits"}[q.objective]
    table = Table(title=f"Ranked by {what} on {hw.name} ({q.input_len} in / {q.output_len} out)")
    for col in ("#", "model", "plan", "users", "TTFT ms", "TPOT ms", "tok/s user / total", "KV tokens",
                "coll/step", "MB/tok", "bound by"):
        table.add_column(col, overflow="fold")
    for d in rows:
        table.add_row(str(d["rank"]), d["model"], d["plan"]["label"], str(d["workload"]["concurrency"]),
                      f"{d['ttft_ms']:,.0f}", f"{d['tpot_ms']:.1f}",
                      f"{d['per_user_tok_s']:.0f} / {d['output_tok_s']:,.0f}", _count(d["kv_cache_tokens"]),
                      str(d["collectives_per_step"]), f"{d['allreduce_bytes_per_token'] / 1e6:.2f}", d["bottleneck"])
    for d in tail:
        table.add_row("-", d["model"], "-", "-", "-", "-", "-", "-", "-", "-", "does not run")
    console.print(table)
    for d in rows:
        console.print(f"[bold]{d['rank']}. {d['model']}[/bold]: {d['why']}")
        for note in d["constraints"]:
            console.print(f"   - {note}")
        console.print(f"   run: {d['command']}")
    for d in tail:
        console.print(f"[bold]-  {d['model']}[/bold]: {d['reason']}")
    if len(rows) > 1:
        console.print(compare(rows[0], rows[1]))
    console.print(f"calibrated: {calibration_line(rows[0]['calibrated'])}")


def calibration_line(cal: dict[str, Any]) -> str:
    """Where the efficiency terms came from, in one line."""
    if not cal.get("rows"):
        return cal["how"]
    cv = cal.get("cv", {}).get("tpot_ms") or cal.get("cv", {}).get("output_tok_s") or {}
    err = f", held-out median error {cv['median_abs_pct']:.0f}%" if cv.get("median_abs_pct") is not None else ""
    return f"{cal['how']} ({cal['hardware']}/{cal['engine']}, fitted on {cal['rows']} measured rows{err})"


def _count(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else f"{n:.0f}"
