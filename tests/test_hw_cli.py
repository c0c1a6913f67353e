"""`advisor hw ...` through the real entry point, `advisor.cli.main` (exit codes, one JSON document, one-line
errors): in this process, and in a new one for the bad-input exits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli

from advisor.hardware import known_ids, load_profile

REPO = Path(__file__).resolve().parents[1]
FIX = Path(__file__).resolve().parent / "fixtures"


def run(*args: str, cwd: Path = REPO, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`advisor hw ARGS` from `cwd`: in this process (`conftest.cli`), or with `process` in a new
    `python -m advisor.cli`."""
    if not process:
        return cli("hw", *args, cwd=cwd)
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", "hw", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_hw_list_json():
    r = run("list", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [d["id"] for d in doc] == known_ids()
    rtx = next(d for d in doc if d["id"] == "rtx-pro-6000-server")
    assert (
        rtx["gpus"] == 8
        and rtx["memory_bytes"] == 102641958912
        and rtx["native_formats"] == ["bf16", "fp8", "fp4"]
    )


def test_hw_show_default_box_human_has_sources():
    r = run("show", "rtx-pro-6000-server")
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    for needle in ("97,887 MiB", "1.792 TB/s", "1.597 TB/s", "AIC", "467.8 TFLOP/s", "regimes fitted to it from"):
        assert needle in out, needle


def test_hw_show_json_with_gpus():
    r = run("show", "rtx-pro-6000-server", "--gpus", "4", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["id"] == "rtx-pro-6000-server" and doc["gpu"]["mem_bw_bytes_per_s"] == 1.792e12
    assert doc["placement"]["gpus"] == [0, 1, 2, 3]
    assert doc["placement"]["slowest_hop"] == "same_socket"
    assert doc["placement"]["vllm_allreduce_backend_decode"] == "nccl"
    assert doc == json.loads(json.dumps(doc))  # plain JSON (no NaN/inf)


def test_hw_show_accepts_a_path(tmp_path: Path):
    src = (REPO / "hwprofiles" / "l40s.toml").read_text().replace('id = "l40s"', 'id = "my-box"')
    p = tmp_path / "my-box.toml"
    p.write_text(src)
    r = run("show", str(p), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["id"] == "my-box"


@pytest.mark.parametrize(
    "args, needle",
    [
        (("show", "nope-gpu"), "known ids: a100-sxm"),
        (("show", "rtx-pro-6000-server", "--gpus", "9"), "has 8 GPUs"),
        (
            ("import-topo", str(FIX / "nccl" / "all_reduce_perf_rtxpro6000_8gpu.txt")),
            "not `nvidia-smi topo -m`",
        ),
        (("import-nccl", str(FIX / "topo" / "hgx_nvswitch.txt")), "not nccl-tests output"),
        (
            ("import-nccl", str(FIX / "nccl" / "all_reduce_perf_rtxpro6000_8gpu.txt"), "-o", "x.toml"),
            "needs --hw",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(args, needle: str, tmp_path: Path):
    r = run(*args, cwd=tmp_path, process=True)  # from an empty folder: a relative -o lands there
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr


def test_bad_profile_exit_2_names_file_and_field(tmp_path: Path):
    src = (REPO / "hwprofiles" / "l40s.toml").read_text().replace("power_w = 350", "power_w = -350")
    p = tmp_path / "neg.toml"
    p.write_text(src)
    r = run("show", str(p))
    assert r.returncode == 2 and str(p) in r.stderr and "gpu.power_w" in r.stderr


def test_import_topo_json():
    r = run("import-topo", str(FIX / "topo" / "single_socket_two_switches.txt"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["sockets"] == [list(range(8))] and doc["pcie_switches"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert doc["nvlink_domains"] == [] and doc["gpus"] == list(range(8))


def test_import_nccl_json_and_profile_copy(tmp_path: Path):
    out = tmp_path / "mybox.toml"
    r = run(
        "import-nccl",
        str(FIX / "nccl" / "all_reduce_perf_rtxpro6000_8gpu.txt"),
        "--json",
        "--hw",
        "rtx-pro-6000-server",
        "-o",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["op"], doc["gpus"], doc["points"], doc["skipped_rows"]) == ("allreduce", 8, 21, 0)
    assert 20 < doc["latency_us"] < 30 and 20 < doc["busbw_gbps"] < 30
    copy = load_profile(str(out))
    term = next(c for c in copy.collectives if c.op == "allreduce" and c.gpus == 8 and c.backend == "nccl")
    assert "all_reduce_perf_rtxpro6000_8gpu.txt" in term.source and copy.id == "mybox"
    assert term.small_latency_us == doc["latency_us"]
    assert len(copy.collectives) == len(load_profile("rtx-pro-6000-server").collectives)


def test_import_nccl_human_reports_skipped_rows(tmp_path: Path):
    text = (FIX / "nccl" / "all_reduce_perf_rtxpro6000_8gpu.txt").read_text()
    p = tmp_path / "all_reduce_perf.txt"
    p.write_text(text[: text.index("     4194304") + 30])
    r = run("import-nccl", str(p))
    assert r.returncode == 0, r.stderr
    assert "skipped 1 unreadable row" in " ".join(r.stdout.split())
