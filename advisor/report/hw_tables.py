"""Rich tables of `advisor hw`: the profile list, one profile with the source of every number, an imported
`nvidia-smi topo -m` and an nccl-tests fit. Each renders the result it is handed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from advisor.report.console import SafeConsole as Console
from advisor.text import plural

if TYPE_CHECKING:
    from advisor.decide.hardware import HardwareRow, ProfileView
    from advisor.hardware import HardwareProfile
    from advisor.hardware.nccl_profile import NcclImport

TOPOLOGY_FIELDS = ("num_gpus", "sockets", "pcie_switches", "nvlink_domains", "nvlink_domain_size", "nvswitch", "p2p",
                   "pcie_gen", "pcie_lanes")


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        table.add_column(c, overflow="fold", no_wrap=i == 0)
    return table


def list_table(rows: list[HardwareRow]) -> None:
    table = _table("Hardware profiles (hwprofiles/)",
                   ["id", "GPUs", "memory GiB", "mem BW TB/s", "BF16 TFLOP/s", "formats", "link"])
    for r in rows:
        table.add_row(r.id, str(r.gpus), f"{r.memory_bytes / 2**30:.1f}", f"{r.mem_bw_bytes_per_s / 1e12:.3f}",
                      f"{r.bf16_dense_flops_per_s / 1e12:.0f}", ",".join(r.native_formats), r.interconnect_class)
    Console().print(table)


def show_tables(view: ProfileView) -> None:
    """The GPU (every number with its source), the topology, the collective terms and, with --gpus, the
    placement."""
    hw = view.profile
    con = Console()
    g = hw.gpu
    con.print(Text.assemble((hw.id, "bold"), f": {hw.name} (interconnect: {hw.interconnect_class})"))
    t = _table("GPU", ["field", "value", "source"])
    t.add_row("name / generation / sm", f"{g.name} / {g.generation} / {g.sm or '-'}", "")
    t.add_row("memory_bytes", f"{g.memory_bytes:,} ({g.memory_bytes / 2**20:,.0f} MiB)", g.memory_bytes_source)
    t.add_row("mem_bw_bytes_per_s", f"{g.mem_bw_bytes_per_s / 1e12:.3f} TB/s (chosen)", g.mem_bw_bytes_per_s_source)
    for alt in g.mem_bw_alternatives:
        t.add_row("  alternative", f"{alt.bytes_per_s / 1e12:.3f} TB/s",
                  f"{alt.source}; not chosen: {alt.why_not_chosen}")
    if g.mem_bw_choice:
        t.add_row("  why chosen", "", g.mem_bw_choice)
    for fmt in ("bf16", "fp8", "fp4"):
        rate = getattr(g, f"{fmt}_dense_flops_per_s")
        t.add_row(f"{fmt}_dense_flops_per_s", f"{rate / 1e12:,.1f} TFLOP/s" if rate else "not native (runs at bf16)",
                  getattr(g, f"{fmt}_dense_flops_per_s_source") or "")
    t.add_row("power_w", f"{g.power_w:.0f} W", g.power_w_source)
    con.print(t)
    _topology(con, hw)
    _fabrics(con, view)
    _collectives(con, hw)
    p = view.placement
    if p is not None:
        con.print(f"--gpus {p.n}: GPUs {p.gpus} (slowest hop: {p.slowest_hop}); decode allreduce in "
                  f"vLLM -> {p.vllm_allreduce_backend_decode}: {p.vllm_allreduce_reason}")


def _topology(con: Console, hw: HardwareProfile) -> None:
    topo = hw.topology
    t = _table("Topology", ["field", "value"])
    for k in TOPOLOGY_FIELDS:
        t.add_row(k, str(getattr(topo, k)))
    t.add_row("source", topo.source)
    for lk in topo.links:
        t.add_row(f"link {lk.path}", f"{lk.p2p_bw_gbps} GB/s, {lk.latency_us} us ({lk.source})")
    con.print(t)


def _fabrics(con: Console, view: ProfileView) -> None:
    """The profile's scale-out fabrics (`hardware/cluster.py`), and with --nodes the cluster's links."""
    hw = view.profile
    if hw.fabrics:
        t = _table("Scale-out fabrics (the first is the default of --nodes)",
                   ["id", "name", "NICs x GB/s", "GPUDirect RDMA", "latency us", "source"])
        for f in hw.fabrics:
            t.add_row(f.id, f.name, f"{f.nics_per_node} x {f.nic_gbps:g}", "yes" if f.gpudirect_rdma else "no",
                      f"{f.latency_us:g}", f.source)
        con.print(t)
    if hw.topology.rack_nodes:
        con.print(f"rack: {hw.topology.rack_nodes} nodes share one {hw.topology.nvlink_domain_size}-GPU NVLink "
                  f"domain ({hw.topology.rack_nodes_source})", highlight=False)
    c = view.cluster
    if c is not None:
        t = _table(f"Cluster: {c.summary}", ["link", "GPUs", "GB/s per GPU per direction", "latency us", "source"])
        for lk in c.links:
            gbps, lat = lk["gbps_per_gpu"], lk["latency_us"]
            t.add_row(str(lk["link"]), str(lk["gpus"]), "-" if gbps is None else f"{gbps:g}",
                      "-" if lat is None else f"{lat:g}", str(lk["source"]))
        con.print(t)


def _collectives(con: Console, hw: HardwareProfile) -> None:
    t = _table("Collectives: t = latency + bytes*factor/busbw, small regime below switch bytes, large above",
               ["op", "backend", "GPUs", "path", "small: us, GB/s", "switch B", "large: us, GB/s", "fit err"])
    for c in hw.collectives:
        err = f"{c.median_abs_err_pct}%/{c.p90_abs_err_pct}%" if c.median_abs_err_pct is not None else "-"
        t.add_row(c.op, c.backend, str(c.gpus), c.path, f"{c.small_latency_us:.1f}, {busbw(c.small_busbw_gbps)}",
                  f"{c.switch_bytes:,.0f}", f"{c.large_latency_us:.1f}, {busbw(c.large_busbw_gbps)}", err)
    con.print(t)
    con.print("Collective sources:")
    for c in hw.collectives:
        con.print(f"  {c.op} {c.backend} x{c.gpus}: {c.source}", highlight=False)


def topo_table(file: Path, doc: dict[str, Any]) -> None:
    """`hw import-topo`: GPU groups per socket, PCIe switch, NVLink domain and NIC."""
    t = _table(f"Topology of {file}", ["field", "GPU groups"])
    for k in ("gpus", "sockets", "pcie_switches", "nvlink_domains", "nics_near_gpus"):
        t.add_row(k, str(doc[k]))
    con = Console()
    con.print(t)
    if doc["skipped_rows"]:
        con.print(f"skipped {doc['skipped_rows']} unreadable row(s)")


def nccl_lines(result: NcclImport) -> None:
    """`hw import-nccl`: the fitted latency floor and bus bandwidth, the fit error, the profile written."""
    con = Console()
    fit, table = result.fit, result.table
    con.print(
        f"{result.file}: {fit.op} on {fit.gpus} GPUs ({table.device or 'device not stated'}), "
        f"{plural(fit.points, 'row')}" + (f", skipped {table.skipped_rows} unreadable row(s)" if table.skipped_rows
                                          else ""))
    con.print(
        f"latency floor {fit.small_latency_us:.2f} us, bus bandwidth {busbw(fit.large_busbw_gbps)} "
        f"(small regime {busbw(fit.small_busbw_gbps)} below {fit.switch_bytes:,.0f} B, large-regime floor "
        f"{fit.large_latency_us:.2f} us); fit error median {fit.median_abs_err_pct}% "
        f"p90 {fit.p90_abs_err_pct}%", highlight=False)
    if "written" in result.doc:
        con.print(f"wrote {result.doc['written']}")


def busbw(gbps: float) -> str:
    """A fitted bus bandwidth; at the fit's ceiling the regime showed no size dependence (latency only)."""
    from advisor.hardware.fit import MAX_BUSBW_GBPS

    return "latency only (no size dependence)" if gbps >= MAX_BUSBW_GBPS else f"{gbps:,.2f} GB/s"
