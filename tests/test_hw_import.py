"""`nvidia-smi topo -m` and nccl-tests importers: hand-written fixtures, partial and garbage inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import COLLECTIVES

from advisor.errors import AdvisorError
from advisor.hardware.nccl_import import fit_nccl_file, parse_nccl_tests
from advisor.hardware.topo_import import parse_topo, topology_summary
from research.aic_data import nccl_series, read_aic_csv

FIX = Path(__file__).resolve().parent / "fixtures"
TOPO, NCCL = FIX / "topo", FIX / "nccl"
AR8 = NCCL / "all_reduce_perf_rtxpro6000_8gpu.txt"


@pytest.mark.parametrize(
    "name, sockets, switches, nvlink",
    [
        ("dual_socket_direct", [[0, 1, 2, 3], [4, 5, 6, 7]], [], []),
        ("single_socket_two_switches", [list(range(8))], [[0, 1, 2, 3], [4, 5, 6, 7]], []),
        ("hgx_nvswitch", [[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 1], [2, 3], [4, 5], [6, 7]], [list(range(8))]),
    ],
)
def test_topo_fixtures(name: str, sockets, switches, nvlink):
    doc = topology_summary(parse_topo(TOPO / f"{name}.txt"))
    assert doc["gpus"] == list(range(8))
    assert (doc["sockets"], doc["pcie_switches"], doc["nvlink_domains"]) == (sockets, switches, nvlink)
    assert doc["skipped_rows"] == 0


def test_topo_partial_rows_are_read_and_counted(tmp_path: Path):
    lines = (TOPO / "dual_socket_direct.txt").read_text().splitlines()
    lines[3] = "GPU2\t NODE\tNODE\tX\tNODE\tSY"  # cut mid-row
    (tmp_path / "t.txt").write_text("\n".join(lines[:7]) + "\n")  # GPU5.. missing (truncated)
    doc = topology_summary(parse_topo(tmp_path / "t.txt"))
    assert doc["gpus"] == [0, 1, 3, 4, 5] and doc["skipped_rows"] == 1
    assert doc["sockets"] == [[0, 1, 3], [4, 5]]


def test_topo_numa_fallback_to_sys_components(tmp_path: Path):
    text = (TOPO / "dual_socket_direct.txt").read_text()
    text = "\n".join(
        ln.replace("\t0\t\tN/A", "\tN/A\t\tN/A")
        .replace("\t1\t\tN/A", "\tN/A\t\tN/A")
        .replace("0-31,64-95", "N/A")
        .replace("32-63,96-127", "N/A")
        for ln in text.splitlines()
    )
    (tmp_path / "t.txt").write_text(text)
    assert topology_summary(parse_topo(tmp_path / "t.txt"))["sockets"] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_nccl_fixture_fit_matches_aic_numbers():
    table, fit = fit_nccl_file(AR8)
    assert (fit.op, fit.gpus, fit.points, table.skipped_rows) == ("allreduce", 8, 21, 0)
    assert table.device == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    rows = read_aic_csv(COLLECTIVES / "aiconfigurator_comm.csv")
    S, t = nccl_series(rows, "rtx_pro_6000_server", "allreduce", 8)
    floor = float(np.median(t[S <= 8192]))  # AIC small-message times: 24.2-26.7 us
    plateau = float(np.median((S / t / 1e3 * 2 * 7 / 8)[S >= 16 * 2**20]))  # AIC busbw at >= 16 MiB
    assert fit.small_latency_us == pytest.approx(floor, rel=0.10)
    assert fit.large_busbw_gbps == pytest.approx(plateau, rel=0.10)
    assert fit.median_abs_err_pct < 15 and fit.p90_abs_err_pct < 35


def test_nccl_old_format_alltoall():
    table, fit = fit_nccl_file(NCCL / "alltoall_perf_2gpu_oldformat.txt")
    assert (fit.op, fit.gpus, fit.points) == ("alltoall", 2, 11)
    assert 20 < fit.large_busbw_gbps < 30 and 5 < fit.small_latency_us < 8


def test_nccl_truncated_table_keeps_valid_rows(tmp_path: Path):
    text = AR8.read_text()
    cut = text.index("     4194304")
    (tmp_path / "all_reduce_perf.txt").write_text(text[: cut + 30])  # last row cut in the middle
    table = parse_nccl_tests(tmp_path / "all_reduce_perf.txt")
    assert len(table.sizes) == 13 and table.skipped_rows == 1
    assert table.sizes[-1] == 2097152


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"", "empty file"),
        (b"   \n\n", "empty file"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "binary"),
        (b"\xff\xfe\xfa garbage", "binary"),
        (
            b"+-----+\n| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05 |\n| GPU  Name |\n",
            "not nccl-tests output",
        ),
        (
            b"# nThread 1 nGpus 8 minBytes 8\n#   size   count   type   redop    root     time   algbw"
            b"   busbw #wrong     time   algbw   busbw #wrong\n       8   2   float\n",
            "no complete rows",
        ),
    ],
)
def test_nccl_garbage_is_one_line_error(tmp_path: Path, content: bytes, needle: str):
    path = tmp_path / "all_reduce_perf.txt"
    path.write_bytes(content)
    with pytest.raises(AdvisorError) as err:
        fit_nccl_file(path)
    assert needle in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"", "empty file"),
        (b"\x00\x01\x02", "binary"),
        (b"# nThread 1 nGpus 8\n#  size count type redop root time algbw busbw\n", "no header row"),
        (b"\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X\tN", "no readable GPU rows"),
    ],
)
def test_topo_garbage_is_one_line_error(tmp_path: Path, content: bytes, needle: str):
    path = tmp_path / "topo.txt"
    path.write_bytes(content)
    with pytest.raises(AdvisorError) as err:
        parse_topo(path)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_nccl_op_from_the_table_or_the_flag(tmp_path: Path):
    # standard nccl-tests output names no op in a "run1.log": the table does (busbw/algbw 1.75 = 2(n-1)/n at 8)
    text = AR8.read_text()
    path = tmp_path / "run1.log"
    path.write_text(text)
    assert fit_nccl_file(path)[1].op == "allreduce"
    assert fit_nccl_file(path, op="allreduce")[1].op == "allreduce"
    # all_gather and alltoall tables look alike: without a name the flag is needed
    old = NCCL / "alltoall_perf_2gpu_oldformat.txt"
    anon = tmp_path / "run2.log"
    anon.write_text(old.read_text())
    with pytest.raises(AdvisorError, match="--op allgather or --op alltoall"):
        fit_nccl_file(anon)


def test_nccl_two_row_table_fits_one_regime(tmp_path: Path):
    lines = AR8.read_text().splitlines()
    head = [ln for ln in lines if ln.startswith("#")][:15]
    rows = [ln for ln in lines if ln.strip().startswith(("1048576 ", "16777216 "))]
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text("\n".join(head + rows) + "\n")
    _, fit = fit_nccl_file(path)
    assert fit.points == 2 and fit.switch_bytes == 0.0
    assert fit.large_busbw_gbps == pytest.approx(
        (16777216 - 1048576) * 2 * 7 / 8 / ((1247.96 - 131.52) * 1e3), rel=0.02
    )


def test_nccl_other_collective_is_rejected(tmp_path: Path):
    path = tmp_path / "out.txt"
    path.write_text("# Collective test starting: broadcast_perf\n" + AR8.read_text())
    with pytest.raises(AdvisorError, match="broadcast_perf is not a collective"):
        fit_nccl_file(path)


@pytest.mark.parametrize("ref", ["rtx-pro-6000-server", "h100-sxm"])
def test_dumped_profile_loads_back_equal(tmp_path: Path, ref: str):
    """profile_to_toml (tomli-w) then advisor.hardware.load: the same pydantic model, the header as comments."""
    import tomllib

    from advisor.hardware import load_profile
    from advisor.hardware.dump import profile_to_toml
    from advisor.hardware.load import parse_profile

    hw = load_profile(ref)
    text = profile_to_toml(hw, header="Copy of a profile.\nSecond header line.")
    assert text.splitlines()[:2] == ["# Copy of a profile.", "# Second header line."]
    path = tmp_path / f"{ref}-copy.toml"
    path.write_text(text)
    again = parse_profile(path)
    assert again == hw and again.collectives and again.topology == hw.topology
    assert tomllib.loads(text) == hw.model_dump(mode="json", exclude_none=True)  # every field, tuples as lists


def test_import_nccl_copy_round_trips(advisor, tmp_path: Path):
    """The file `hw import-nccl -o` writes: header comment, loadable, and dumped again it reads back equal."""
    from advisor.hardware.dump import profile_to_toml
    from advisor.hardware.load import parse_profile

    out = tmp_path / "mine.toml"
    assert advisor("hw", "import-nccl", str(AR8), "--hw", "rtx-pro-6000-server", "-o", str(out)).code == 0
    text = out.read_text()
    assert text.startswith(f"# Copy of rtx-pro-6000-server with allreduce x8 terms fitted from {AR8.name} "
                           "(advisor hw import-nccl).\n")
    hw = parse_profile(out)
    term = next(c for c in hw.collectives if c.op == "allreduce" and c.backend == "nccl" and c.gpus == 8)
    table, fit = fit_nccl_file(AR8)
    assert term.small_latency_us == fit.small_latency_us and term.large_busbw_gbps == fit.large_busbw_gbps
    assert len(term.measured_bytes) == len(set(table.sizes))
    again = tmp_path / "again.toml"
    again.write_text(profile_to_toml(hw))
    assert parse_profile(again) == hw
