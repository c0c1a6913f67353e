"""`advisor hw list|show|import-topo|import-nccl`: hardware profiles and the importers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from advisor.commands import options as opt

hw_app = typer.Typer(
    help="Hardware profiles: list, show, import nvidia-smi topo / nccl-tests output.", no_args_is_help=True
)


@hw_app.command("list")
def list_cmd(json_out: opt.Json = False) -> None:
    """List the shipped hardware profiles."""
    from advisor.decide.hardware import list_profiles
    from advisor.report.hw_tables import list_table
    from advisor.report.sink import emit

    emit(list_profiles(), json_out, list_table)


@hw_app.command("show")
def show_cmd(
    hw_ref: Annotated[str, typer.Argument(metavar="ID|PATH", help="Profile id or path to a .toml")],
    gpus: Annotated[int | None, typer.Option("--gpus", help="Pick N GPUs of the node and say which.")] = None,
    nodes: opt.Nodes = None, fabric: opt.FabricOpt = None,
    json_out: opt.Json = False,
) -> None:
    """Show one profile with the source of every number (with --nodes: the cluster's links)."""
    from advisor.decide.hardware import show_profile
    from advisor.report.hw_tables import show_tables
    from advisor.report.sink import emit

    emit(show_profile(hw_ref, gpus, nodes, fabric), json_out, show_tables)


@hw_app.command("import-topo")
def import_topo_cmd(
    file: Annotated[Path, typer.Argument(help="Text of `nvidia-smi topo -m`")], json_out: opt.Json = False
) -> None:
    """Read `nvidia-smi topo -m` output into sockets, PCIe switches and NVLink domains."""
    from advisor.hardware.topo_import import parse_topo, topology_summary
    from advisor.report.hw_tables import topo_table
    from advisor.report.sink import emit

    emit(topology_summary(parse_topo(file)), json_out, lambda d: topo_table(file, d))


@hw_app.command("import-nccl")
def import_nccl_cmd(
    file: Annotated[Path, typer.Argument(help="nccl-tests output (all_reduce_perf, ...)")],
    op: Annotated[str | None, typer.Option("--op", help="Collective, when the file does not say.")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="Group size, when the file does not say.")] = None,
    hw_ref: Annotated[str | None, typer.Option("--hw", help="Base profile for -o (id or path).")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write a profile copy with the fit.")] = None,
    json_out: opt.Json = False,
) -> None:
    """Fit latency floor and bus bandwidth to nccl-tests output."""
    from advisor.hardware.nccl_profile import import_nccl
    from advisor.report.hw_tables import nccl_lines
    from advisor.report.sink import emit, warn

    if output is not None:
        opt.output_folder("-o", output)
    result = import_nccl(file, op, gpus, hw_ref, output)
    for line in result.warnings:
        warn(line)
    emit(result.doc, json_out, lambda _: nccl_lines(result))
