"""Issue #11 items 14-15: `hw import-nccl` reads the collective from the table, refuses a GPU count that
contradicts the file, warns when the file's GPU is not the profile's, and never prints a bandwidth ceiling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, assert_one_line

AR8 = REPO / "tests" / "fixtures" / "nccl" / "all_reduce_perf_rtxpro6000_8gpu.txt"
RTX = "NVIDIA RTX PRO 6000 Blackwell Server Edition"

# nccl-tests conventions per test (src/*.cu GetCollByteCount / GetBw): redop, root, size = count x 2 B x this,
# busbw / algbw
TESTS = {
    "all_reduce": ("sum", -1, lambda n: 1, lambda n: 2 * (n - 1) / n),
    "reduce_scatter": ("sum", -1, lambda n: n, lambda n: (n - 1) / n),
    "all_gather": ("none", -1, lambda n: n, lambda n: (n - 1) / n),
    "alltoall": ("none", -1, lambda n: n, lambda n: (n - 1) / n),
    "broadcast": ("none", 0, lambda n: 1, lambda n: 1.0),
}


def nccl_table(test: str, n: int, device: str = RTX, flat_below: int = 0) -> str:
    """nccl-tests output for `test` on n GPUs (out-of-place then in-place columns, root column included); times
    flat (latency only) below `flat_below` bytes."""
    redop, root, mult, bus = TESTS[test]
    lines = [f"# nThread 1 nGpus {n} minBytes 512 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 20",
             "#", "# Using devices"]
    lines += [f"#  Rank  {r} Group  0 Pid  4187 on  node device  {r} [0x{r:02x}] {device}" for r in range(n)]
    lines += ["#", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time"
                   "   algbw   busbw #wrong"]
    for k in range(16):
        count = 256 << k
        size = count * 2 * mult(n)
        t = 20.0 if size < flat_below else 20.0 + size / 2e4
        algbw = size / t / 1e3
        cells = f"{size:12d}  {count:12d}  {'half':>8}  {redop:>6}  {root:6d}  {t:7.2f}  {algbw:6.2f}  " \
                f"{algbw * bus(n):6.2f}  0"
        lines.append(f"{cells}  {cells.split(None, 5)[5]}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("test", "n", "op"), [
    ("all_reduce", 8, "allreduce"), ("reduce_scatter", 8, "reducescatter"), ("all_reduce", 4, "allreduce"),
    ("reduce_scatter", 2, "reducescatter"),
])
def test_the_op_is_read_from_the_table(advisor, tmp_path: Path, test: str, n: int, op: str) -> None:
    f = tmp_path / "results.txt"  # a name that says nothing
    f.write_text(nccl_table(test, n))
    r = advisor("hw", "import-nccl", str(f), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert (doc["op"], doc["gpus"], doc["points"]) == (op, n, 16)


def test_look_alikes_ask_for_op_naming_both(advisor, tmp_path: Path) -> None:
    f = tmp_path / "results.txt"
    f.write_text(nccl_table("all_gather", 8))
    assert_one_line(advisor("hw", "import-nccl", str(f)), "fits allgather and alltoall alike",
                    "pass --op allgather or --op alltoall")
    ok = advisor("hw", "import-nccl", str(f), "--op", "allgather", "--json")
    assert ok.code == 0 and json.loads(ok.out)["op"] == "allgather"
    named = tmp_path / "all_gather_perf.txt"  # the file name picks between look-alikes
    named.write_text(nccl_table("all_gather", 8))
    assert json.loads(advisor("hw", "import-nccl", str(named), "--json").out)["op"] == "allgather"


def test_a_collective_the_model_does_not_use_is_named(advisor, tmp_path: Path) -> None:
    f = tmp_path / "results.txt"
    f.write_text(nccl_table("broadcast", 8))
    assert_one_line(advisor("hw", "import-nccl", str(f)), "the table reads as broadcast_perf",
                    "not a collective the cost model uses")


def test_a_gpu_count_against_the_file_is_refused(advisor, tmp_path: Path) -> None:
    f = tmp_path / "all_reduce_perf.txt"
    f.write_text(nccl_table("all_reduce", 2))
    assert_one_line(advisor("hw", "import-nccl", str(f), "--gpus", "4"),
                    "--gpus 4", "measured on 2 GPUs")
    assert advisor("hw", "import-nccl", str(f), "--gpus", "2").code == 0


def test_another_gpu_than_the_profiles_is_warned(advisor, tmp_path: Path) -> None:
    f = tmp_path / "all_reduce_perf.txt"
    f.write_text(nccl_table("all_reduce", 8, device="NVIDIA H100 80GB HBM3"))
    out = tmp_path / "copy.toml"
    r = advisor("hw", "import-nccl", str(f), "--hw", "rtx-pro-6000-server", "-o", str(out), "--json")
    assert r.code == 0 and out.exists()
    warning = ("the file was measured on NVIDIA H100 80GB HBM3, the profile's GPU is NVIDIA RTX PRO 6000 Blackwell "
               "Server Edition: its collective terms describe another GPU")
    assert json.loads(r.out)["warnings"] == [warning]
    assert r.err.strip() == f"advisor: warning: {warning}"
    same = advisor("hw", "import-nccl", str(AR8), "--hw", "rtx-pro-6000-server", "--json")
    assert same.code == 0 and json.loads(same.out)["warnings"] == [] and same.err == ""


def test_a_latency_only_regime_prints_no_bandwidth_ceiling(advisor, tmp_path: Path) -> None:
    f = tmp_path / "all_reduce_perf.txt"
    f.write_text(nccl_table("all_reduce", 8, flat_below=1 << 20))
    doc = json.loads(advisor("hw", "import-nccl", str(f), "--json").out)
    assert doc["terms"]["small_busbw_gbps"] >= 1e5  # the fit's ceiling: no size dependence below the switch
    out = advisor("hw", "import-nccl", str(f)).out
    assert "small regime latency only (no size dependence)" in out and "100000" not in out and "1e+05" not in out


def test_profile_copy_keeps_the_measured_curve(advisor, tmp_path: Path) -> None:
    """`-o` writes the file's own measured times per size into the copy; the copy predicts them back."""
    import numpy as np

    from advisor.hardware.comm import collective_time_us
    from advisor.hardware.load import parse_profile
    from advisor.hardware.nccl_import import fit_nccl_file

    out = tmp_path / "mine.toml"
    assert advisor("hw", "import-nccl", str(AR8), "--hw", "rtx-pro-6000-server", "-o", str(out)).code == 0
    table, _ = fit_nccl_file(AR8, None, None)
    hw = parse_profile(out)
    term = next(c for c in hw.collectives if c.op == "allreduce" and c.backend == "nccl" and c.gpus == 8)
    assert len(term.measured_bytes) == len(set(table.sizes)) >= 10
    S, t = np.array(table.sizes), np.array(table.times_oop_us)
    pred = collective_time_us(hw, "allreduce", S, 8, engine="nccl", gpus=list(range(8)))
    assert np.median(np.abs(pred / t - 1)) < 0.02
