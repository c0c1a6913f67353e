"""Rich tables for people: each renders a result it is handed, never recomputes one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from advisor.hardware import HardwareProfile
from advisor.report.units import billions, gb, gib, kib, plural

if TYPE_CHECKING:
    from advisor.cost.prediction import FitResult, Prediction
    from advisor.decide.choose import Ranking


def inspect_table(docs: list[dict[str, Any]]) -> None:
    table = Table(title="Model architectures", show_lines=False)
    for col in ("model", "attention", "layers", "experts", "total", "active", "weights", "KV/token", "source"):
        table.add_column(col, overflow="fold")
    for d in docs:
        kinds = ", ".join(f"{v} {k.replace('_attention', '')}" for k, v in d["layer_kinds"].items()
                          if v and not k.endswith("_mlp"))
        moe = d["moe"]
        experts = f"{moe['num_experts']} top-{moe['experts_per_token']}" + (
            f" +{moe['shared_experts']} shared" if moe["shared_experts"] else "") if moe else "dense"
        attn = f"{d['attention']} {d['num_attention_heads']}h/{d['num_kv_heads']}kv x{d['head_dim']}"
        table.add_row(d["model"], attn, f"{d['num_layers']}: {kinds}", experts, billions(d["total_params"]),
                      billions(d["active_params"]), f"{gb(d['weight_bytes'])} {d['weight_dtype']}",
                      f"{kib(d['kv_bytes_per_token'])} {d['kv_dtype']}", d["source"].split(" (")[0])
    console = Console()
    console.print(table)
    for d in docs:
        if " (" in d["source"]:
            console.print(f"{d['model']}: answered from the bundled catalog ({d['source'].split(' (', 1)[1]}")


def fit_table(docs: list[FitResult], hw: HardwareProfile) -> None:
    table = Table(title=f"Memory fit on {hw.name}")
    for col in ("model", "plan", "fits", "weights/GPU", "KV room/GPU", "KV tokens", "max seqs", "why not"):
        table.add_column(col, overflow="fold")
    for d in docs:
        pg = d.per_gpu
        table.add_row(d.model, d.plan.label, "yes" if d.fits else "no", gib(pg.weights_bytes if pg else 0),
                      gib(pg.kv_cache_bytes if pg else 0), f"{d.kv_cache_tokens:,}",
                      f"{d.max_concurrency:,} x {d.max_model_len}", d.reason or "")
    Console().print(table)


def predict_panel(d: Prediction) -> None:
    console = Console()
    head = f"{d.model} on {d.hardware} at {d.plan.label}"
    if not d.fits or d.breakdown_ms is None:
        console.print(f"{head}: does not run: {d.reason}")
        return
    w = d.workload
    console.print(f"[bold]{head}[/bold], {plural(w.concurrency, 'user')}, {w.input_len:,} in / {w.output_len:,} out")
    console.print(f"  TTFT {d.ttft_ms:,.0f} ms   TPOT {d.tpot_ms:,.1f} ms   {d.per_user_tok_s:,.0f} tok/s per "
                  f"user while decoding   {d.output_tok_s:,.0f} tok/s total ({d.running_sequences:,} running)")
    if d.queueing:
        console.print(f"  queueing: {d.queueing}")
    console.print("  decode step: " + ", ".join(f"{k} {v:.2f} ms" for k, v in d.breakdown_ms.items())
                  + f"  -> bound by {d.bottleneck}")
    console.print(f"  {d.collectives_per_step} collectives per step ({d.allreduces_per_step} allreduces), "
                  f"{(d.allreduce_bytes_per_token or 0) / 1e6:.2f} MB allreduce payload per token")
    pg = d.per_gpu
    assert pg is not None
    console.print(f"  per GPU: weights {gib(pg.weights_bytes)}, KV room {gib(pg.kv_cache_bytes)} "
                  f"({d.kv_cache_tokens:,} tokens, {d.kv_cache_dtype})")
    console.print(f"  calibrated: {calibration_line(d.calibrated)}")


def rank_table(ranking: Ranking, hw: HardwareProfile) -> None:
    q, rows, tail = ranking.query, ranking.rows, ranking.unranked
    console = Console()
    table = Table(title=f"Ranked by {q.describe()} on {hw.name} ({q.input_len} in / {q.output_len} out)")
    for col in ("#", "model", "plan", "users", "TTFT ms", "TPOT ms", "tok/s user / total", "KV tokens",
                "coll/step", "MB/tok", "bound by"):
        table.add_column(col, overflow="fold")
    for d in rows:
        table.add_row(str(d.rank), d.model, d.plan.label, str(d.workload.concurrency), f"{d.ttft_ms:,.0f}",
                      f"{d.tpot_ms:.1f}", f"{d.per_user_tok_s:.0f} / {d.output_tok_s:,.0f}",
                      _count(d.kv_cache_tokens), str(d.collectives_per_step),
                      f"{(d.allreduce_bytes_per_token or 0) / 1e6:.2f}", d.bottleneck)
    for u in tail:
        table.add_row("-", u.model, "-", "-", "-", "-", "-", "-", "-", "-", "does not run" if u.found else "not found")
    console.print(table)
    for d in rows:
        console.print(f"[bold]{d.rank}. {d.model}[/bold]: {d.why}")
        for note in d.constraints:
            console.print(f"   - {note}")
        if d.meets or d is rows[0]:
            console.print(f"   run{'' if d.meets else ' (closest, misses the limits)'}: {d.command}")
            for note in d.command_notes:
                console.print(f"   note: {note}")
    for u in tail:
        console.print(f"[bold]-  {u.model}[/bold]: {u.reason}")
    for line in (ranking.verdict, ranking.comparison):
        if line:
            console.print(line)
    console.print(f"calibrated: {calibration_line(rows[0].calibrated)}")


def calibration_line(cal: dict[str, Any]) -> str:
    """Where the efficiency terms came from, in one line; a borrowed calibration's error is the donor's."""
    if not cal.get("rows"):
        return str(cal["how"])
    cv = cal.get("cv", {}).get("tpot_ms") or cal.get("cv", {}).get("output_tok_s") or {}
    pct = cv.get("median_abs_pct")
    donor = cal.get("borrowed_from")
    if donor:
        err = f"; its held-out median error ({pct:.0f}%) is {donor}'s, not this box's" if pct is not None else ""
        return (f"borrowed from {donor}: no measurements for {cal.get('for_hardware', 'this box')}; "
                f"{cal['engine']} terms fitted on {plural(cal['rows'], 'row')} measured on {donor}{err}")
    err = f", held-out median error {pct:.0f}%" if pct is not None else ""
    return f"{cal['how']} ({cal['hardware']}/{cal['engine']}, fitted on {plural(cal['rows'], 'measured row')}{err})"


def _count(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else f"{n:.0f}"
