"""The commands of a disaggregated deployment (`decide/disagg_command.py`, `decide/disagg_dynamo.py`) paste as
printed: every line goes to `bash -c` with recording fake engines first on PATH (as tests/test_paste_safety.py), and
each fake receives exactly the advertised argv and environment, the files the line writes hold what the JSON says,
and a hostile model path stays one argument. Then what the engines need to pair the pools: roles, ports, the
router listing every worker at its own port, each engine's disaggregation flags (sources in the modules)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "data" / "configs" / "Qwen--Qwen3-8B.json"
HOSTILE = "my model;$(touch PWN)`touch PWN2`'\"&|"
FAKE = """#!/bin/sh
exec {python} -c 'import json, os, sys
keep = {{k: v for k, v in os.environ.items() if k not in ("PATH", "HOME", "PWD", "SHLVL", "OLDPWD", "_")
        and not k.startswith(("LC_", "LANG"))}}
open("{log}", "a").write(json.dumps({{"prog": "{name}", "argv": sys.argv[1:], "env": keep}}) + "\\n")' "$@"
"""
PROGRAMS = ("vllm", "vllm-router", "python", "python3", "trtllm-serve", "srun", "ray")


def paste(tmp: Path, commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each command's line run by `bash -c` from an empty folder with fake engines first on PATH; what each fake
    recorded, in order."""
    bin_dir, log = tmp / "bin", tmp / "calls.jsonl"
    bin_dir.mkdir()
    for name in PROGRAMS:
        exe = bin_dir / name
        exe.write_text(FAKE.format(python=sys.executable, log=log, name=name))
        exe.chmod(0o755)
    work = tmp / "cwd"
    work.mkdir()
    for c in commands:
        done = subprocess.run(["bash", "-c", c["line"]], cwd=work, capture_output=True, text=True, timeout=60,
                              env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp)})
        assert done.returncode == 0, done.stderr
        for name, text in c["files"].items():  # the file the same line wrote is what the JSON says
            assert (work / name).read_text() == text
    assert not any((d / n).exists() for d in (work, tmp, Path(os.getcwd())) for n in ("PWN", "PWN2"))
    return [json.loads(line) for line in log.read_text().splitlines()]


def check_pasted(calls: list[dict[str, Any]], commands: list[dict[str, Any]]) -> None:
    """Every fake got exactly the advertised argv (after its program name) and environment."""
    assert len(calls) == len(commands)
    for call, c in zip(calls, commands, strict=True):
        assert call["prog"] == c["argv"][0]
        assert call["argv"] == c["argv"][1:]
        assert call["env"] == c["env"]


def predict(advisor: Any, *args: str) -> dict[str, Any]:
    r = advisor("predict", *args, "--json")
    assert r.code == 0, r.err
    doc: dict[str, Any] = json.loads(r.out)
    assert doc["prediction"]["refused"] is None, doc["prediction"]["refused"]
    return doc


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    model_dir = tmp_path / HOSTILE
    model_dir.mkdir()
    shutil.copy(CONFIG, model_dir / "config.json")
    return model_dir


POOLS = ("--prefill-tp", "2", "--prefill-workers", "2", "--decode-tp", "4", "--input-len", "4096")


def test_vllm_workers_and_router_paste(advisor: Any, hostile: Path, tmp_path: Path) -> None:
    doc = predict(advisor, str(hostile), "--hw", "h100-sxm", *POOLS)
    cmds = doc["commands"]
    assert [c["role"] for c in cmds] == ["prefill", "prefill", "decode", "router"]
    check_pasted(paste(tmp_path, cmds), cmds)
    pre, dec, router = cmds[:2], cmds[2], cmds[3]
    assert [c["env"]["CUDA_VISIBLE_DEVICES"] for c in cmds[:3]] == ["0,1", "2,3", "4,5,6,7"]
    for c, role in ((pre[0], "kv_producer"), (pre[1], "kv_producer"), (dec, "kv_consumer")):
        assert c["argv"][:3] == ["vllm", "serve", str(hostile)]  # the hostile path is one argument
        kv = json.loads(c["argv"][c["argv"].index("--kv-transfer-config") + 1])
        assert kv == {"kv_connector": "NixlConnector", "kv_role": role}
    ports = [c["argv"][c["argv"].index("--port") + 1] for c in cmds[:3]]
    assert ports == ["8100", "8101", "8200"]
    # one NIXL handshake port per worker on the host, DP ranks taking base + rank
    assert len({c["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] for c in cmds[:3]}) == 3
    assert router["argv"] == ["vllm-router", "--vllm-pd-disaggregation", "--prefill", "http://127.0.0.1:8100",
                              "--prefill", "http://127.0.0.1:8101", "--decode", "http://127.0.0.1:8200", "--host",
                              "0.0.0.0", "--port", "8000"]


def test_sglang_workers_and_router_paste(advisor: Any, hostile: Path, tmp_path: Path) -> None:
    doc = predict(advisor, str(hostile), "--hw", "h100-sxm", "--engine", "sglang", *POOLS, "--kv-backend", "nixl")
    cmds = doc["commands"]
    check_pasted(paste(tmp_path, cmds), cmds)
    pre, dec, router = cmds[:2], cmds[2], cmds[3]
    for c in cmds[:3]:
        a = c["argv"]
        assert a[:5] == ["python", "-m", "sglang.launch_server", "--model-path", str(hostile)]
        assert a[a.index("--disaggregation-mode") + 1] == c["role"]
        assert a[a.index("--disaggregation-transfer-backend") + 1] == "nixl"
    boots = [c["argv"][c["argv"].index("--disaggregation-bootstrap-port") + 1] for c in pre]
    assert boots == ["8998", "8999"] and "--disaggregation-bootstrap-port" not in dec["argv"]
    assert router["argv"] == ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation",
                              "--prefill", "http://127.0.0.1:8100", "8998", "--prefill", "http://127.0.0.1:8101",
                              "8999", "--decode", "http://127.0.0.1:8200", "--host", "0.0.0.0", "--port", "8000"]


def test_trtllm_workers_and_router_paste(advisor: Any, hostile: Path, tmp_path: Path) -> None:
    doc = predict(advisor, str(hostile), "--hw", "h100-sxm", "--engine", "trtllm", *POOLS, "--kv-backend", "ucx")
    cmds = doc["commands"]
    check_pasted(paste(tmp_path, cmds), cmds)
    ctx, gen, router = cmds[0], cmds[2], cmds[3]
    assert ctx["argv"][:2] == ["trtllm-serve", str(hostile)]
    ctx_yaml = ctx["files"][ctx["argv"][ctx["argv"].index("--extra_llm_api_options") + 1]]
    gen_yaml = gen["files"][gen["argv"][gen["argv"].index("--extra_llm_api_options") + 1]]
    transceiver = "cache_transceiver_config:\n  backend: UCX\n  max_tokens_in_buffer: "
    assert transceiver in ctx_yaml and transceiver in gen_yaml
    assert "disable_overlap_scheduler: true" in ctx_yaml and "disable_overlap_scheduler" not in gen_yaml
    assert router["argv"] == ["trtllm-serve", "disaggregated", "-c", "disagg_config.yaml"]
    cfg = router["files"]["disagg_config.yaml"]
    assert ('context_servers:\n  num_instances: 2\n  urls:\n    - "127.0.0.1:8100"\n    - "127.0.0.1:8101"\n'
            'generation_servers:\n  num_instances: 1\n  urls:\n    - "127.0.0.1:8200"\n') in cfg


def test_across_nodes_dynamo_launches_every_worker(advisor: Any, tmp_path: Path) -> None:
    """DeepSeek-V3 on 4 GB200 trays: a 4-GPU prefill worker on tray 0 and an 8-GPU decode worker over trays 1-2,
    under Dynamo: the frontend, `dynamo.trtllm` per worker, the one spanning trays through Slurm."""
    doc = predict(advisor, "deepseek-ai/DeepSeek-V3", "--hw", "gb200", "--nodes", "4", "--engine", "trtllm",
                  "--prefill-dp", "4", "--prefill-ep", "4", "--decode-dp", "8", "--decode-ep", "8")
    cmds = doc["commands"]
    check_pasted(paste(tmp_path, cmds), cmds)
    assert [(c["role"], c["node"]) for c in cmds] == [("router", 0), ("prefill", 0), ("decode", 1)]
    assert cmds[0]["argv"] == ["python3", "-m", "dynamo.frontend", "--http-port", "8000"]
    for c in cmds:
        assert c["env"]["ETCD_ENDPOINTS"] == "NODE0_IP:2379" and c["env"]["NATS_SERVER"] == "nats://NODE0_IP:4222"
    pre, dec = cmds[1], cmds[2]
    assert pre["argv"][:3] == ["python3", "-m", "dynamo.trtllm"] and pre["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert dec["argv"][:9] == ["srun", "-N", "2", "--ntasks", "8", "--ntasks-per-node", "4", "--mpi=pmix",
                               "trtllm-llmapi-launch"]
    gen_yaml = next(iter(dec["files"].values()))
    assert "tensor_parallel_size: 8\n" in gen_yaml and "moe_expert_parallel_size: 8\n" in gen_yaml
    assert "enable_attention_dp: true" in gen_yaml and "cache_transceiver_config:" in gen_yaml


def test_sglang_worker_across_nodes_runs_one_process_per_node(advisor: Any, tmp_path: Path) -> None:
    doc = predict(advisor, "deepseek-ai/DeepSeek-V3", "--hw", "gb200", "--nodes", "4", "--engine", "sglang",
                  "--prefill-dp", "8", "--prefill-ep", "8", "--decode-dp", "8", "--decode-ep", "8")
    cmds = doc["commands"]
    check_pasted(paste(tmp_path, cmds), cmds)
    assert [(c["role"], c["node"]) for c in cmds] == [("router", 0), ("prefill", 0), ("prefill", 1), ("decode", 2),
                                                      ("decode", 3)]
    dec = [c for c in cmds if c["role"] == "decode"]
    for rank, c in enumerate(dec):
        a = c["argv"]
        assert a[:3] == ["python3", "-m", "dynamo.sglang"] and a[a.index("--disaggregation-mode") + 1] == "decode"
        assert a[a.index("--nnodes") + 1] == "2" and a[a.index("--node-rank") + 1] == str(rank)
        assert a[a.index("--dist-init-addr") + 1] == "NODE2_IP:5000"


def test_vllm_worker_across_nodes_runs_one_process_per_dp_rank(advisor: Any, tmp_path: Path) -> None:
    """vLLM under Dynamo: a DP8 worker over two 4-GPU trays is eight `dynamo.vllm` processes, one per DP rank on its
    own GPU, all pointing at the worker's first tray (`--data-parallel-address`), each with its NIXL port."""
    doc = predict(advisor, "deepseek-ai/DeepSeek-V3", "--hw", "gb200", "--nodes", "4", "--prefill-dp", "8",
                  "--prefill-ep", "8", "--decode-dp", "8", "--decode-ep", "8")
    cmds = doc["commands"]
    check_pasted(paste(tmp_path, cmds), cmds)
    pre = [c for c in cmds if c["role"] == "prefill"]
    assert [c["node"] for c in pre] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [c["env"]["CUDA_VISIBLE_DEVICES"] for c in pre] == ["0", "1", "2", "3"] * 2
    for rank, c in enumerate(pre):
        a = c["argv"]
        assert a[:5] == ["python3", "-m", "dynamo.vllm", "--model", "deepseek-ai/DeepSeek-V3"]
        assert a[a.index("--data-parallel-size") + 1] == "8" and a[a.index("--data-parallel-rank") + 1] == str(rank)
        assert a[a.index("--data-parallel-address") + 1] == "NODE0_IP"
        assert json.loads(a[a.index("--kv-transfer-config") + 1])["kv_role"] == "kv_both"
    assert len({c["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] for c in cmds if c["role"] != "router"}) == 16
