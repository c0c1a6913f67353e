"""`advisor hw list|show|import-topo|import-nccl`: hardware profiles and the importers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from advisor.commands.output import emit
from advisor.errors import AdvisorError
from advisor.report.units import plural

hw_app = typer.Typer(
    help="Hardware profiles: list, show, import nvidia-smi topo / nccl-tests output.", no_args_is_help=True
)

JSON_OPT = typer.Option(False, "--json", help="Print one JSON document instead of tables.")


def _console() -> Any:
    from rich.console import Console

    return Console()


def _table(title: str, columns: list[str]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        table.add_column(c, overflow="fold", no_wrap=i == 0)
    return table


@hw_app.command("list")
def list_cmd(json_out: bool = JSON_OPT) -> None:
    """List the shipped hardware profiles."""
    from advisor.hardware import known_ids, load_profile

    rows: list[dict[str, Any]] = []
    for hid in known_ids():
        hw = load_profile(hid)
        rows.append(
            {
                "id": hw.id,
                "name": hw.name,
                "gpus": hw.topology.num_gpus,
                "memory_bytes": hw.gpu.memory_bytes,
                "mem_bw_bytes_per_s": hw.gpu.mem_bw_bytes_per_s,
                "bf16_dense_flops_per_s": hw.gpu.bf16_dense_flops_per_s,
                "native_formats": hw.gpu.native_formats,
                "interconnect_class": hw.interconnect_class,
            }
        )
    emit(rows, json_out, _list_table)


def _list_table(rows: list[dict[str, Any]]) -> None:
    table = _table(
        "Hardware profiles (hwprofiles/)",
        ["id", "GPUs", "memory GiB", "mem BW TB/s", "BF16 TFLOP/s", "formats", "link"],
    )
    for r in rows:
        table.add_row(
            r["id"],
            str(r["gpus"]),
            f"{r['memory_bytes'] / 2**30:.1f}",
            f"{r['mem_bw_bytes_per_s'] / 1e12:.3f}",
            f"{r['bf16_dense_flops_per_s'] / 1e12:.0f}",
            ",".join(r["native_formats"]),
            r["interconnect_class"],
        )
    _console().print(table)


def _placement(hw: Any, n: int) -> dict[str, Any]:
    from advisor.hardware.comm import allreduce_backend_reason
    from advisor.hardware.placement import group_path, pick_gpus

    gpus = pick_gpus(hw, n)
    backend, why = allreduce_backend_reason(hw, n, 2 * 7168, "vllm")
    return {
        "n": n,
        "gpus": gpus,
        "slowest_hop": group_path(hw.topology, gpus),
        "vllm_allreduce_backend_decode": backend,
        "vllm_allreduce_reason": why,
    }


def _show_tables(hw: Any, doc: dict[str, Any]) -> None:
    con = _console()
    g = hw.gpu
    con.print(f"[bold]{hw.id}[/bold]: {hw.name} (interconnect: {hw.interconnect_class})")
    t = _table("GPU", ["field", "value", "source"])
    t.add_row("name / generation / sm", f"{g.name} / {g.generation} / {g.sm or '-'}", "")
    t.add_row(
        "memory_bytes", f"{g.memory_bytes:,} ({g.memory_bytes / 2**20:,.0f} MiB)", g.memory_bytes_source
    )
    t.add_row(
        "mem_bw_bytes_per_s", f"{g.mem_bw_bytes_per_s / 1e12:.3f} TB/s (chosen)", g.mem_bw_bytes_per_s_source
    )
    for alt in g.mem_bw_alternatives:
        t.add_row(
            "  alternative",
            f"{alt.bytes_per_s / 1e12:.3f} TB/s",
            f"{alt.source}; not chosen: {alt.why_not_chosen}",
        )
    if g.mem_bw_choice:
        t.add_row("  why chosen", "", g.mem_bw_choice)
    for fmt in ("bf16", "fp8", "fp4"):
        rate = getattr(g, f"{fmt}_dense_flops_per_s")
        t.add_row(
            f"{fmt}_dense_flops_per_s",
            f"{rate / 1e12:,.1f} TFLOP/s" if rate else "not native (runs at bf16)",
            getattr(g, f"{fmt}_dense_flops_per_s_source") or "",
        )
    t.add_row("power_w", f"{g.power_w:.0f} W", g.power_w_source)
    con.print(t)
    _topology_and_collectives(hw, doc)


def _topology_and_collectives(hw: Any, doc: dict[str, Any]) -> None:
    con = _console()
    topo = hw.topology
    t = _table("Topology", ["field", "value"])
    for k in (
        "num_gpus",
        "sockets",
        "pcie_switches",
        "nvlink_domains",
        "nvlink_domain_size",
        "nvswitch",
        "p2p",
        "pcie_gen",
        "pcie_lanes",
    ):
        t.add_row(k, str(getattr(topo, k)))
    t.add_row("source", topo.source)
    for lk in topo.links:
        t.add_row(f"link {lk.path}", f"{lk.p2p_bw_gbps} GB/s, {lk.latency_us} us ({lk.source})")
    con.print(t)
    t = _table(
        "Collectives: t = latency + bytes*factor/busbw, small regime below switch bytes, large above",
        ["op", "backend", "GPUs", "path", "small: us, GB/s", "switch B", "large: us, GB/s", "fit err"],
    )
    for c in hw.collectives:
        err = f"{c.median_abs_err_pct}%/{c.p90_abs_err_pct}%" if c.median_abs_err_pct is not None else "-"
        t.add_row(
            c.op,
            c.backend,
            str(c.gpus),
            c.path,
            f"{c.small_latency_us:.1f}, {_busbw(c.small_busbw_gbps)}",
            f"{c.switch_bytes:,.0f}",
            f"{c.large_latency_us:.1f}, {_busbw(c.large_busbw_gbps)}",
            err,
        )
    con.print(t)
    con.print("Collective sources:")
    for c in hw.collectives:
        con.print(f"  {c.op} {c.backend} x{c.gpus}: {c.source}", highlight=False)
    if "placement" in doc:
        p = doc["placement"]
        con.print(
            f"--gpus {p['n']}: GPUs {p['gpus']} (slowest hop: {p['slowest_hop']}); decode allreduce in "
            f"vLLM -> {p['vllm_allreduce_backend_decode']}: {p['vllm_allreduce_reason']}"
        )


@hw_app.command("show")
def show_cmd(
    hw_ref: str = typer.Argument(..., metavar="ID|PATH", help="Profile id or path to a .toml"),
    gpus: int = typer.Option(None, "--gpus", help="Pick N GPUs of the node and say which."),
    json_out: bool = JSON_OPT,
) -> None:
    """Show one profile with the source of every number."""
    from advisor.hardware import load_profile

    hw = load_profile(hw_ref)
    doc: dict[str, Any] = hw.model_dump(mode="json")
    doc["native_formats"] = hw.gpu.native_formats
    if gpus is not None:
        doc["placement"] = _placement(hw, gpus)
    emit(doc, json_out, lambda d: _show_tables(hw, d))


@hw_app.command("import-topo")
def import_topo_cmd(
    file: Path = typer.Argument(..., help="Text of `nvidia-smi topo -m`"), json_out: bool = JSON_OPT
) -> None:
    """Read `nvidia-smi topo -m` output into sockets, PCIe switches and NVLink domains."""
    from advisor.hardware.topo_import import parse_topo, topology_summary

    emit(topology_summary(parse_topo(file)), json_out, lambda d: _topo_table(file, d))


def _topo_table(file: Path, doc: dict[str, Any]) -> None:
    t = _table(f"Topology of {file}", ["field", "GPU groups"])
    for k in ("gpus", "sockets", "pcie_switches", "nvlink_domains", "nics_near_gpus"):
        t.add_row(k, str(doc[k]))
    _console().print(t)
    if doc["skipped_rows"]:
        _console().print(f"skipped {doc['skipped_rows']} unreadable row(s)")


def _write_profile_copy(base_ref: str, out: Path, fit: Any, table: Any, src_file: Path) -> None:
    import numpy as np

    from advisor.files import write_atomic
    from advisor.hardware import load_profile
    from advisor.hardware.dump import profile_to_toml
    from advisor.hardware.fit import median_curve
    from advisor.hardware.load import parse_profile
    from advisor.hardware.placement import group_path

    base = load_profile(base_ref)
    if fit.gpus > base.topology.num_gpus:
        raise AdvisorError(f"{src_file}: {fit.gpus} GPUs but profile {base.id} has {base.topology.num_gpus}")
    sizes, times = median_curve(np.array(table.sizes), np.array(table.times_oop_us))
    term = {k: v for k, v in fit.as_dict().items()}
    term.update(
        backend="nccl",
        path=group_path(base.topology, list(range(fit.gpus))) or "same_socket",
        measured_bytes=list(sizes), measured_us=list(times),
        source=f"measured curve and regimes fitted to it from nccl-tests output {src_file.name} ({fit.points} "
        "sizes, out-of-place time) by advisor hw import-nccl",
    )
    keep = [
        c.model_dump()
        for c in base.collectives
        if not (c.op == fit.op and c.backend == "nccl" and c.gpus == fit.gpus)
    ]
    data = base.model_dump()
    data.update(
        id=out.stem, name=f"{base.name} (collectives from {src_file.name})", collectives=keep + [term]
    )
    new = type(base).model_validate(data)
    write_atomic(
        out,
        profile_to_toml(
            new,
            header=f"Copy of {base.id} with {fit.op} x{fit.gpus} terms "
            f"fitted from {src_file.name} (advisor hw import-nccl).",
        ),
    )
    parse_profile(out)


@hw_app.command("import-nccl")
def import_nccl_cmd(
    file: Path = typer.Argument(..., help="nccl-tests output (all_reduce_perf, ...)"),
    op: str = typer.Option(None, "--op", help="Collective, when the file does not say."),
    gpus: int = typer.Option(None, "--gpus", help="Group size, when the file does not say."),
    hw_ref: str = typer.Option(None, "--hw", help="Base profile for -o (id or path)."),
    output: Path = typer.Option(None, "-o", "--output", help="Write a profile copy with the fit."),
    json_out: bool = JSON_OPT,
) -> None:
    """Fit latency floor and bus bandwidth to nccl-tests output."""
    from advisor.hardware.nccl_import import fit_nccl_file, summary

    if output is not None and hw_ref is None:
        raise AdvisorError("-o needs --hw ID (the base profile to copy)")
    table, fit = fit_nccl_file(file, op, gpus)
    doc = summary(table, fit, file)
    warnings: list[str] = []
    if hw_ref is not None:
        from advisor.hardware import load_profile
        from advisor.hardware.nccl_import import device_mismatch

        other = device_mismatch(table.device, load_profile(hw_ref).gpu.name)
        if other:
            warnings.append(other)
            print(f"advisor: warning: {other}", file=sys.stderr)
    doc["warnings"] = warnings
    if output is not None:
        _write_profile_copy(hw_ref, output, fit, table, file)
        doc["written"] = str(output)
    emit(doc, json_out, lambda d: _nccl_lines(file, table, fit, d))


def _nccl_lines(file: Path, table: Any, fit: Any, doc: dict[str, Any]) -> None:
    con = _console()
    con.print(
        f"{file}: {fit.op} on {fit.gpus} GPUs ({table.device or 'device not stated'}), {plural(fit.points, 'row')}"
        + (f", skipped {table.skipped_rows} unreadable row(s)" if table.skipped_rows else "")
    )
    con.print(
        f"latency floor {fit.small_latency_us:.2f} us, bus bandwidth {_busbw(fit.large_busbw_gbps)} "
        f"(small regime {_busbw(fit.small_busbw_gbps)} below {fit.switch_bytes:,.0f} B, large-regime floor "
        f"{fit.large_latency_us:.2f} us); fit error median {fit.median_abs_err_pct}% "
        f"p90 {fit.p90_abs_err_pct}%", highlight=False
    )
    if "written" in doc:
        con.print(f"wrote {doc['written']}")


def _busbw(gbps: float) -> str:
    """A fitted bus bandwidth; at the fit's ceiling the regime showed no size dependence (latency only)."""
    from advisor.hardware.fit import MAX_BUSBW_GBPS

    return "latency only (no size dependence)" if gbps >= MAX_BUSBW_GBPS else f"{gbps:,.2f} GB/s"
