"""Human output of the disaggregated answers: `rank --mode disagg|auto` (per model the two answers side by side, the
verdict and its reasons, the commands), `predict` of a disaggregated deployment (TTFT by its parts, why, the
commands) and `pareto --mode disagg|auto` as lines. Renders what `decide/disagg_*.py` computed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from advisor.report.console import SafeConsole as Console
from advisor.report.fitwidth import Col, fitted_table, print_line, say_dropped

if TYPE_CHECKING:
    from advisor.decide.disagg_one import DisaggPredicted
    from advisor.decide.disagg_rank import DisaggRanked, DisaggRanking
    from advisor.decide.disagg_verdict import DisaggVerdict
    from advisor.decide.pareto import Frontier

SIDE_COLS = (Col("serving", 10), Col("deployment", 9, fold=True), Col("GPUs", 6, right=True),
             Col("users", 7, right=True), Col("TTFT ms", 6, right=True), Col("TPOT ms", 8, right=True),
             Col("tok/s total", 9, right=True), Col("tok/s/GPU", 5, right=True), Col("meets", 4))
PARTS = {"request": "request", "prealloc": "KV pre-allocation", "prefill_wait": "prefill wait", "prefill": "prefill",
         "transfer": "transfer", "handoff": "hand-off", "first_step": "first decode step", "queue": "queued"}


def side_rows(v: DisaggVerdict) -> list[list[str]]:
    """The two answers as table cells: each one's deployment over the budget, users, latencies and tok/s."""
    rows = []
    d, a = v.disaggregated, v.aggregated
    if d is not None:
        p = d.prediction
        reps = f"{d.replicas} x ({p.prefill.workers} x {p.prefill.plan} + {p.decode.workers} x {p.decode.plan})"
        rows.append(["disaggregated", reps, f"{d.replicas * p.gpus}", f"{d.replicas * p.concurrency:,}",
                     f"{p.ttft_ms or 0:,.0f}", f"{p.tpot_ms or 0:,.1f}", f"{d.total_tok_s:,.0f}",
                     f"{d.tok_s_per_gpu:,.0f}", "yes" if d.meets else "no"])
    if a is not None:
        rows.append(["aggregated", f"{a.replicas} x {a.plan}", f"{a.replicas * a.gpus}", f"{a.replicas * a.users:,}",
                     f"{a.ttft_ms:,.0f}", f"{a.tpot_ms:,.1f}", f"{a.total_tok_s:,.0f}", f"{a.tok_s_per_gpu:,.0f}",
                     "yes" if a.meets else "no"])
    return rows


def _commands(console: Console, commands: list[dict[str, Any]], notes: list[str]) -> None:
    for c in commands:
        gpus = c["gpus"]
        where = f"node {c['node']}" + (f", GPUs {','.join(map(str, gpus))}" if gpus else "")
        print_line(console, f"   {c['role']} ({where}): {c['line']}")
    for note in notes:
        console.print(Text(f"   note: {note}"))


def disagg_rank_table(ranking: DisaggRanking) -> None:
    """Per model: what it serves and at how many tok/s, both answers in a table, the reasons, the commands."""
    console = Console()
    q = ranking.query
    for d in ranking.rows:
        _ranked(console, d, q.limits())
    for u in ranking.unranked:
        console.print(Text.assemble((f"-  {u.model}", "bold"), f": {u.reason}"))


def _ranked(console: Console, d: DisaggRanked, limits: str) -> None:
    v = d.verdict
    q = v.query
    title = (f"{d.rank}. {d.model} on {v.budget} x {d.hardware} ({q.input_len:,} in / {q.output_len:,} out, {limits}): "
             f"{d.serve} serving" + ("" if d.meets else " (closest: misses the targets)"))
    table, dropped = fitted_table(console, title, SIDE_COLS, side_rows(v))
    console.print(table)
    say_dropped(console, dropped)
    for line in v.reason:
        console.print(Text(f"   {line}"))
    _commands(console, d.commands, d.command_notes)


def disagg_predict_panel(d: DisaggPredicted) -> None:
    """The deployment, TTFT by its parts, TPOT, tok/s, what each side sustains, why, the commands."""
    console = Console()
    p = d.prediction
    head = (f"{p.model} on {p.hardware} ({p.engine}, {p.backend}): {p.prefill.workers} x {p.prefill.plan} prefill + "
            f"{p.decode.workers} x {p.decode.plan} decode, {p.gpus} GPUs")
    if p.refused is not None or p.ttft_ms is None:
        console.print(Text(f"{head}: does not run: {p.refused}"))
        return
    console.print(Text(f"{head}, {p.concurrency:,} users, {p.input_len:,} in / {p.output_len:,} out", style="bold"))
    console.print(Text(f"  TTFT {p.ttft_ms:,.0f} ms   TPOT {p.tpot_ms or 0:,.1f} ms   {p.per_user_tok_s or 0:,.0f} "
                       f"tok/s per user   {p.output_tok_s or 0:,.0f} tok/s total ({p.output_tok_s_per_gpu or 0:,.0f} "
                       "per GPU)"))
    parts = p.ttft_parts_ms or {}
    console.print(Text("  TTFT: " + ", ".join(f"{PARTS.get(k, k)} {v:,.1f} ms" for k, v in parts.items() if v > 0.05)))
    console.print(Text(f"  decode batch {p.decode_batch_per_rank or 0:.1f} per rank; prefill budget "
                       f"{p.prefill_utilisation or 0:.0%} used; link {p.link_utilisation or 0:.0%} busy"))
    for line in d.why:
        console.print(Text(f"  {line}"))
    _commands(console, d.commands, d.command_notes)


def disagg_pareto_lines(front: Frontier, figure: str | None) -> None:
    """Per model and mode: frontier points, the operating point (or none within the targets), each frontier
    point; then where the figure went."""
    from advisor.report.sink import line

    for model in front.models():
        for mode in ("agg", "disagg"):
            mine = [p for p in front.points if p.model == model and p.mode == mode]
            if not mine:
                continue
            edge = sorted((p for p in mine if p.frontier), key=lambda p: -p.output_tok_s_per_gpu)
            op = next((p for p in mine if p.operating), None)
            where = (f"operating point {op.plan} at {op.concurrency:,} users: {op.output_tok_s_per_gpu:,.0f} tok/s "
                     f"per GPU, {op.per_user_tok_s:,.1f} tok/s per user" if op else "no point within the targets")
            name = "aggregated" if mode == "agg" else "disaggregated"
            line(f"{model} {name}: {len(edge)} frontier points; {where}")
            for p in edge:
                line(f"   {p.plan:32s} {p.concurrency:5,d} users  {p.per_user_tok_s:8.1f} tok/s/user  "
                     f"{p.output_tok_s_per_gpu:9.1f} tok/s/GPU{'' if p.meets else '  (misses the targets)'}")
    if figure:
        line(f"figure: {figure}")


def disagg_pareto_csv(points: list[Any]) -> None:
    """`pareto --mode disagg|auto --csv`: the aggregated CSV's columns and the mode of each point."""
    from advisor.report.pareto_text import CSV_COLUMNS
    from advisor.report.sink import write_csv

    write_csv((*CSV_COLUMNS, "mode"), (p.model_dump() for p in points))
