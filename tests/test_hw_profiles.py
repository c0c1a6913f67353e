"""Shipped hardware profiles: schema, sources, values from the spec tables, bad-profile errors."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.hardware import DEFAULT_HW, HardwareProfile, known_ids, load_profile
from advisor.hardware.dump import profile_to_toml
from advisor.hardware.load import profiles_dir

REQUIRED = {
    "rtx-pro-6000-server",
    "rtx-pro-6000-ws",
    "h100-sxm",
    "h200-sxm",
    "b200-sxm",
    "b300-sxm",
    "gb200",
    "gb300",
    "a100-sxm",
    "l40s",
    "rtx-4090",
    "mi300x",
}


def test_required_ids_shipped_and_default():
    assert REQUIRED <= set(known_ids())
    assert DEFAULT_HW == "rtx-pro-6000-server"
    assert load_profile().id == DEFAULT_HW


@pytest.mark.parametrize("hid", sorted(REQUIRED))
def test_every_profile_validates_with_sources(hid: str):
    hw = load_profile(hid)
    assert isinstance(hw, HardwareProfile) and hw.id == hid
    g = hw.gpu
    for name in ("memory_bytes", "mem_bw_bytes_per_s", "bf16_dense_flops_per_s", "power_w"):
        assert len(getattr(g, f"{name}_source")) > 10, name
    for fmt in ("fp8", "fp4"):
        if getattr(g, f"{fmt}_dense_flops_per_s") is not None:
            assert getattr(g, f"{fmt}_dense_flops_per_s_source")
    if g.l2_bytes is not None:
        assert len(g.l2_bytes_source or "") > 10 and 32 * 2**20 <= g.l2_bytes <= 256 * 2**20
    assert all(len(c.source) > 20 for c in hw.collectives)
    assert all(len(lk.source) > 10 for lk in hw.topology.links)
    assert hw.topology.source
    # every group size a node can use for TP has an NCCL allreduce term at or above it
    sizes = {c.gpus for c in hw.collectives if c.op == "allreduce" and c.backend == "nccl"}
    assert max(sizes) >= min(hw.topology.num_gpus, 8)


def test_rtx_pro_6000_server_values_and_bandwidth_conflict_kept():
    hw = load_profile("rtx-pro-6000-server")
    assert hw.gpu.memory_bytes == 97_887 * 2**20  # nvidia-smi 97,887 MiB
    assert hw.gpu.mem_bw_bytes_per_s == 1.792e12
    assert [a.bytes_per_s for a in hw.gpu.mem_bw_alternatives] == [1.597e12]
    assert "1.792" in (hw.gpu.mem_bw_choice or "")
    assert hw.gpu.sm == "sm120" and hw.gpu.generation == "blackwell"
    assert hw.interconnect_class == "pcie"
    t = hw.topology
    assert (t.num_gpus, t.sockets, t.nvlink_domains, t.p2p) == (8, [[0, 1, 2, 3], [4, 5, 6, 7]], [], True)


def test_dense_flops_native_and_fallback_rates():
    rtx, a100, h100 = load_profile("rtx-pro-6000-server"), load_profile("a100-sxm"), load_profile("h100-sxm")
    assert rtx.gpu.native_formats == ["bf16", "fp8", "fp4"]
    assert rtx.gpu.dense_flops_per_s("fp4") == 1871.2e12
    assert a100.gpu.native_formats == ["bf16"]
    assert a100.gpu.dense_flops_per_s("fp8") == a100.gpu.dense_flops_per_s("bf16") == 312e12
    assert h100.gpu.dense_flops_per_s("fp4") == 989.4e12  # NVFP4 on Hopper runs as W4A16 -> bf16 math
    assert rtx.gpu.dense_flops_per_s("int4") == 467.8e12  # W4A16: activations are bf16
    with pytest.raises(ValueError):
        rtx.gpu.dense_flops_per_s("fp16x")


def test_unknown_id_lists_known_ids():
    with pytest.raises(AdvisorError) as err:
        load_profile("h900-sxm")
    msg = str(err.value)
    assert "h900-sxm" in msg and all(i in msg for i in REQUIRED) and "\n" not in msg


def _base() -> dict:
    return tomllib.loads((profiles_dir() / "rtx-pro-6000-server.toml").read_text())


def _write(tmp_path: Path, data: dict) -> Path:
    from advisor.hardware.dump import table_to_toml

    p = tmp_path / "mybox.toml"
    p.write_text(table_to_toml(data))
    return p


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["gpu"].pop("memory_bytes"), "gpu.memory_bytes"),
        (lambda d: d["gpu"].update(mem_bw_bytes_per_s=-1.0), "gpu.mem_bw_bytes_per_s"),
        (lambda d: d["gpu"].update(memory_bytes="96 GB"), "gpu.memory_bytes"),
        (lambda d: d["topology"].update(num_gpus="eight"), "topology.num_gpus"),
        (lambda d: d["collectives"][0].update(small_busbw_gbps=0), "collectives.0.small_busbw_gbps"),
        (lambda d: d["gpu"].update(hbm_stacks=8), "gpu.hbm_stacks"),
        (lambda d: d["gpu"].pop("bf16_dense_flops_per_s_source"), "gpu.bf16_dense_flops_per_s_source"),
    ],
)
def test_bad_profile_names_file_and_field(tmp_path: Path, mutate, field: str):
    data = _base()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(AdvisorError) as err:
        load_profile(str(path))
    msg = str(err.value)
    assert str(path) in msg and field in msg, msg


def test_user_profile_by_path_round_trips(tmp_path: Path):
    hw = load_profile("h100-sxm")
    path = tmp_path / "copy.toml"
    path.write_text(profile_to_toml(hw))
    again = load_profile(str(path))
    assert again == hw


def test_garbage_profile_file_is_one_line(tmp_path: Path):
    bad = tmp_path / "x.toml"
    bad.write_bytes(b"\x00\x01\x02garbage")
    with pytest.raises(AdvisorError, match=re.escape(str(bad))):
        load_profile(str(bad))
    bad.write_text("id = [unclosed")
    with pytest.raises(AdvisorError, match="not valid TOML"):
        load_profile(str(bad))
    with pytest.raises(AdvisorError, match="no such profile file"):
        load_profile(str(tmp_path / "missing.toml"))
