"""Rich tables for people: each renders a result it is handed, never recomputes one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from advisor.calibrate.provenance import calibration_line
from advisor.decide.explain import prefill_note
from advisor.decide.replicas import whole
from advisor.hardware import HardwareProfile
from advisor.report.console import SafeConsole as Console
from advisor.report.fitwidth import Col, fitted_table, print_line, say_dropped
from advisor.report.uncertainty import PARENS, bounds, caveats, interval_note, ranged, stacked
from advisor.report.units import billions, gb, gib, kib
from advisor.text import plural

if TYPE_CHECKING:
    from advisor.cost.prediction import FitResult, Prediction
    from advisor.decide.architecture import ModelSummary
    from advisor.decide.query import Query
    from advisor.decide.ranked import RankedPlan, Ranking


LOG_LINES_MAX = 8  # plans whose start-up log lines `fit_table` prints
# `fit` answers which plans fit and with how much KV room: those columns go last
FIT_COLS = (Col("model", 10, fold=True), Col("plan", 10), Col("fits", 9), Col("weights/GPU", 5),
            Col("act+other/GPU", 3), Col("KV room/GPU", 4), Col("KV tokens", 7), Col("max seqs", 6),
            Col("why not", 8, fold=True, fold_min=16))
INSPECT_COLS = (Col("model", 10, fold=True), Col("attention", 5), Col("layers", 7, fold=True), Col("experts", 6),
                Col("total", 9, right=True), Col("active", 8, right=True), Col("weights", 4, right=True),
                Col("KV/token", 3, right=True), Col("source", 1, fold=True))


def inspect_table(docs: list[ModelSummary]) -> None:
    cells = []
    for d in docs:
        kinds = [f"{v} {k.replace('_attention', '')}" for k, v in d.layer_kinds.items()
                 if v and not k.endswith("_mlp")]
        if d.mlp_only_layers:
            kinds.append(f"{d.mlp_only_layers} MLP-only")
        moe = d.moe
        experts = f"{moe.num_experts} top-{moe.experts_per_token}" + (
            f" +{moe.shared_experts} shared" if moe.shared_experts else "") if moe else "dense"
        attn = f"{d.attention} {d.num_attention_heads}h/{d.num_kv_heads}kv x{d.head_dim}"
        cells.append([d.model, attn, f"{d.num_layers}: {', '.join(kinds)}", experts, billions(d.total_params),
                      billions(d.active_params), f"{gb(d.weight_bytes)} {d.weight_dtype}",
                      f"{kib(d.kv_bytes_per_token)} {d.kv_dtype}", d.source.split(" (")[0]])
    console = Console()
    table, dropped = fitted_table(console, "Model architectures", INSPECT_COLS, cells)
    console.print(table)
    say_dropped(console, dropped)
    for d in docs:
        if " (" in d.source:
            console.print(Text(f"{d.model}: answered from the bundled catalog ({d.source.split(' (', 1)[1]}"))
    for d in docs:
        _quality_lines(console, d)


def _quality_lines(console: Console, d: ModelSummary) -> None:
    """A model's published quality scores, each with its source and kind; "unknown" when there is none."""
    if not d.quality:
        console.print(Text(f"{d.model} quality: unknown (no published score in advisor/quality/quality.csv)"))
        return
    whose = f" (scores of {d.quality_scored_as}: {d.quality_note})" if d.quality_note else ""
    console.print(Text(f"{d.model} quality{whose}:"))
    for f in sorted(d.quality, key=lambda f: (not f.default_scale, f.benchmark)):
        ci = f" ±{f.ci95:g}" if f.ci95 else ""
        mark = " [default scale]" if f.default_scale else ""
        console.print(Text(f"   {f.benchmark}{mark}: {f.score:g}{ci} {f.unit} ({f.kind}"
                           f"{', ' + f.date if f.date else ''}); source: {f.source}"))


def fit_table(docs: list[FitResult], hw: HardwareProfile) -> None:
    """The fit per plan, then each running plan's start-up log lines per GPU (when few plans are shown)."""
    log = next((d.startup_log for d in docs if d.startup_log), None)
    engine = f" ({log.engine} {log.engine_version} accounting)" if log else ""
    c = next((d.cluster for d in docs if d.cluster), None)
    box = f"{c.nodes} x {hw.name} over {c.fabric_name or 'one NVLink domain'}" if c else hw.name
    cells = [[d.model, d.plan.label, "yes" if d.fits else "no", gib(pg.weights_bytes) if pg else "-",
              gib(pg.activation_bytes + pg.overhead_bytes) if pg else "-", gib(pg.kv_cache_bytes) if pg else "-",
              f"{d.kv_cache_tokens:,}", f"{d.max_concurrency:,} x {d.max_model_len}" if d.max_model_len else "-",
              d.reason or ""] for d in docs for pg in (d.per_gpu,)]
    console = Console()
    table, dropped = fitted_table(console, f"Memory fit on {box}{engine}", FIT_COLS, cells)
    console.print(table)
    say_dropped(console, dropped)
    shown = [d for d in docs if d.fits and d.startup_log]
    if len(shown) > LOG_LINES_MAX:
        console.print(f"(start-up log lines: pass a MODEL and --tp for them; {len(shown)} plans run)")
        return
    for d in shown:
        assert d.startup_log is not None
        log = d.startup_log
        console.print(Text.assemble((f"{d.model} {d.plan.label}", "bold"),
                                    f", per GPU, as {log.engine} {log.engine_version} would log it:"))
        for line in d.startup_log.lines:
            console.print(f"  {line}", highlight=False)


def predict_panel(d: Prediction) -> None:
    console = Console()
    box = (f"{d.cluster.nodes} x {d.hardware} ({d.cluster.fabric_name or 'one NVLink domain'})" if d.cluster
           else d.hardware)
    head = f"{d.model} on {box} at {d.plan.label}"
    if not d.fits or d.breakdown_ms is None:
        console.print(f"{head}: does not run: {d.reason}")
        return
    w = d.workload
    console.print(Text.assemble((head, "bold"), f", {plural(w.concurrency, 'user')}, {w.input_len:,} in / "
                                                 f"{w.output_len:,} out"))
    console.print(f"  TTFT {ranged(d, 'ttft_ms', 0, 'ms')}   TPOT {ranged(d, 'tpot_ms', 1, 'ms')}   "
                  f"{ranged(d, 'per_user_tok_s', 0, 'tok/s')} per user while decoding   "
                  f"{ranged(d, 'output_tok_s', 0, 'tok/s')} total ({d.running_sequences:,} running)")
    if note := interval_note(d.calibrated, d.interval is not None):
        console.print(f"  ({note})")
    if d.queueing:
        console.print(f"  queueing: {d.queueing}")
    if d.spec_tokens:
        console.print(f"  speculation: {plural(d.spec_tokens, 'MTP draft')} per step, {d.tokens_per_step:.2f} tokens "
                      f"per sequence per step (acceptance: {d.spec_acceptance_source})")
    console.print("  decode step: " + ", ".join(f"{k} {v:.2f} ms" for k, v in d.breakdown_ms.items())
                  + f"  -> bound by {d.bottleneck}")
    if held := prefill_note(d):
        console.print(f"  {held}")
    console.print(f"  {d.collectives_per_step} collectives per step ({d.allreduces_per_step} allreduces), "
                  f"{(d.allreduce_bytes_per_token or 0) / 1e6:.2f} MB allreduce payload per token")
    pg = d.per_gpu
    assert pg is not None
    console.print(f"  per GPU: weights {gib(pg.weights_bytes)} ({d.weight_dtype}), KV room {gib(pg.kv_cache_bytes)} "
                  f"({d.kv_cache_tokens:,} tokens, {d.kv_cache_dtype})")
    console.print(f"  calibrated: {calibration_line(d.calibrated)}")


# what the title announces (the score's column, the quality scale) goes last; TTFT and TPOT go only after the
# compact form (each interval under its value) was tried
RANK_COLS = (Col("#", 10, right=True), Col("model", 10, fold=True), Col("quality", 9, right=True), Col("plan", 9),
             Col("users", 6, right=True),
             Col("TTFT ms", 7, right=True), Col("TPOT ms", 8, right=True),
             Col("tok/s user / total", 10, right=True, short="tok/s\nuser / total"),
             Col("KV tokens", 3, right=True), Col("coll/step", 2, right=True), Col("MB/tok", 1, right=True),
             Col("bound by", 4))
RANK_PROTECT = 7


def _rank_cells(d: RankedPlan, model: str, compact: bool) -> list[str]:
    """A ranked row's cells: TTFT, TPOT and tok/s with their 80% intervals, beside (or, `compact`, under) them."""
    form = stacked if compact else ranged
    tok = f"{ranged(d, 'per_user_tok_s')} / {ranged(d, 'output_tok_s')}"
    if compact and bounds(d, "output_tok_s"):
        tok = (f"{d.per_user_tok_s:,.0f} / {d.output_tok_s:,.0f}\n"
               f"{bounds(d, 'per_user_tok_s')} / {bounds(d, 'output_tok_s')}")
    return [str(d.rank), model, _quality_cell(d), d.plan.label, f"{d.workload.concurrency:,}", form(d, "ttft_ms"),
            form(d, "tpot_ms", 1), tok, _count(d.kv_cache_tokens), str(d.collectives_per_step),
            f"{(d.allreduce_bytes_per_token or 0) / 1e6:.2f}", d.bottleneck or ""]


def rank_table(ranking: Ranking, hw: HardwareProfile, boxes: bool = False) -> None:
    """The ranking as a table, then per row why, capacity, constraints and the command; `boxes`: rows come from
    several hardware profiles (each row says which)."""
    from advisor.hardware import load_profile

    q, rows, tail = ranking.query, ranking.rows, ranking.unranked
    console = Console()
    unranked = [["-", u.model, *["-"] * 9, "does not run" if u.found else "not found"] for u in tail]
    cells, compact = ([_rank_cells(whole(d), f"{d.model} on {d.hardware}" if boxes else d.model, small)
                       for d in rows] + unranked for small in (False, True))
    where = "several boxes" if boxes else hw.name
    title = (f"Ranked by {ranking.order or q.describe()} on {where} ({q.input_len:,} in / {q.output_len:,} out); "
             f"quality: {q.quality_scale}")
    # quality is what best-under-slo ranks on: kept before the speed columns there
    cols = tuple(Col(c.header, 9, c.fold, c.right) if c.header == "quality" and q.objective == "best-under-slo"
                 else c for c in RANK_COLS)
    cols, cells, compact = targets_column(q, rows, cols, cells, compact)
    table, dropped = fitted_table(console, title, cols, cells, compact, RANK_PROTECT)
    console.print(table)
    say_dropped(console, dropped)
    if any(d.interval for d in rows):
        console.print(f"({PARENS})", highlight=False)
    for d in rows:
        console.print(Text.assemble((f"{d.rank}. {d.model}" + (f" on {d.hardware}" if boxes else ""), "bold"),
                                    f": {d.why}"))
        capacity = capacity_line(d, q, load_profile(d.hardware) if boxes else hw)
        if capacity:
            console.print(Text(f"   capacity: {capacity}"))
        if d.speculation:
            console.print(Text(f"   speculation: {d.speculation}"))
        for note in d.constraints:
            console.print(Text(f"   - {note}"))
        if d.meets or d is rows[0]:
            print_line(console, f"   run{'' if d.meets else ' (closest, misses the limits)'}: {d.command}")
            for note in d.command_notes:
                console.print(Text(f"   note: {note}"))
    for u in tail:
        console.print(Text.assemble((f"-  {u.model}", "bold"), f": {u.reason}"))
    for line in (ranking.verdict, ranking.comparison, *dict.fromkeys(d.scale_out for d in rows if d.scale_out)):
        if line:
            console.print(Text(line))
    seen = set()
    for d in rows:  # one line per box
        if d.hardware not in seen:
            seen.add(d.hardware)
            console.print(Text(f"calibrated{f' ({d.hardware})' if boxes else ''}: {calibration_line(d.calibrated)}"))
            for caveat in caveats(d.calibrated):
                console.print(Text(f"   {caveat}"))


def _quality_cell(d: RankedPlan) -> str:
    if d.quality is None:
        return "unknown"
    return f"{d.quality:g}" + (f" ±{d.quality_ci95:g}" if d.quality_ci95 else "")


def capacity_line(d: RankedPlan, q: Query, hw: HardwareProfile) -> str:
    """Users at the SLO, the cost and energy of a million output tokens there, and replicas on the node."""
    parts = []
    if d.max_users_at_slo is not None:
        if d.max_users_at_slo == 0:
            parts.append(f"not one user within {q.limits()} ({d.binding_limit} binds)")
        else:
            bind = {"TPOT": "TPOT binds", "TTFT": "TTFT binds",
                    "running": "the engine runs no more at once: the next user waits",
                    "none": f"none binds up to {d.max_users_at_slo:,} users, the largest load evaluated"}.get(
                d.binding_limit or "", d.binding_limit or "")
            least = "at least " if d.binding_limit == "none" else ""
            each = " on each replica" if d.replicas > 1 else ""
            parts.append(f"{least}{d.max_users_at_slo:,} users{each} within {q.limits()} ({bind}), "
                         f"{d.output_tok_s_at_slo or 0:,.0f} tok/s there")
    where = "there" if d.max_users_at_slo and q.objective == "latency" else "at this workload"
    if d.usd_per_mtok is not None:
        parts.append(f"${d.usd_per_mtok:,.2f} per million output tokens {where} at ${d.gpu_hour_price:g}/GPU-hour")
    if d.kwh_per_mtok is not None:
        parts.append(f"{d.kwh_per_mtok:,.2f} kWh per million output tokens (upper bound: {d.plan.gpus} x "
                     f"{hw.gpu.power_w:g} W board power)")
    if d.replicas > 1 and d.node_output_tok_s:
        where = f"the {d.cluster.nodes} nodes" if d.cluster else "the node"
        parts.append(f"{d.replicas} replicas of {d.plan.label} fit {where}: {d.node_output_tok_s:,.0f} tok/s in all")
    return "; ".join(parts)


def targets_column(q: Query, rows: tuple[RankedPlan, ...], cols: tuple[Col, ...], cells: list[list[str]],
                   compact: list[list[str]]) -> tuple[tuple[Col, ...], list[list[str]], list[list[str]]]:
    """goodput and best-under-slo: a column after the users saying whether each row meets the targets."""
    if q.objective not in ("goodput", "best-under-slo"):
        return cols, cells, compact
    j = [c.header for c in cols].index("users") + 1
    marks = ["yes" if d.meets else "no" for d in rows] + ["-"] * (len(cells) - len(rows))
    cols = (*cols[:j], Col("meets targets", 9, right=True, short="meets"), *cols[j:])
    wide, narrow = ([[*r[:j], m, *r[j:]] for r, m in zip(grid, marks, strict=True)] for grid in (cells, compact))
    return cols, wide, narrow


def _count(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else f"{n:.0f}"
