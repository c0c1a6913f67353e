"""`advisor inspect` end to end (`advisor.cli.main` in this process; a new `python -m advisor.cli`, as a user runs
it, for the catalog answer and the remote-code config), offline:
catalog answers with every documented JSON field, every config in tests/data/configs inspects, bad input
is one line + exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import cli

from advisor.arch.local import read_json_file
from advisor.arch.reader import read_config

REPO = Path(__file__).resolve().parents[1]
CONFIGS = Path(__file__).resolve().parent / "data" / "configs"

# `inspect --json`: the fields every object has at least.
FIELDS = {"model", "source", "architecture", "num_layers", "hidden_size", "attention", "layer_kinds",
          "num_attention_heads", "num_kv_heads", "head_dim", "moe", "total_params", "active_params",
          "active_params_excl_embedding", "mtp_params", "vision_params", "weight_dtype", "weight_bytes",
          "kv_bytes_per_token", "max_context"}
MOE_FIELDS = {"num_experts", "experts_per_token", "shared_experts", "moe_layers"}


def run(*args: str, hf_home: Path, cwd: Path = REPO, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`advisor inspect ARGS` offline from `cwd`: in this process (`conftest.cli`), or with `process` in a new
    `python -m advisor.cli`, as a user runs it."""
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(hf_home), "COLUMNS": "200"}
    if not process:
        return cli("inspect", *args, env=env, drop=("HF_", "ADVISOR_"), cwd=cwd)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "ADVISOR_"))}, **env,
           "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "advisor.cli", "inspect", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


@pytest.fixture
def hf_home(tmp_path: Path) -> Path:
    home = tmp_path / "hf_home"
    home.mkdir()
    return home


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("advisor: error: ")
    return lines[0]


# ---- 9. offline catalog answers --------------------------------------------------------------------

def test_offline_catalog_answers_with_design_fields(hf_home: Path) -> None:
    proc = run("MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5", "--json", hf_home=hf_home, process=True)
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    assert [d["model"] for d in docs] == ["MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"]
    for d in docs:
        assert d["source"].startswith("catalog:")
        assert FIELDS <= set(d), FIELDS - set(d)
        assert MOE_FIELDS <= set(d["moe"])
    minimax, kimi = docs
    assert minimax["attention"] == "gqa" and kimi["attention"] == "mla"
    assert minimax["kv_bytes_per_token"] == 62 * 2 * 8 * 128 * 2  # BF16 KV, vLLM `QKVParallelLinear`
    assert kimi["kv_bytes_per_token"] == 61 * 576 * 2  # MLA latent, vLLM `MLAAttention.get_kv_cache_spec`
    assert minimax["weight_dtype"] == "fp8" and kimi["weight_dtype"] == "int4"
    assert minimax["moe"]["num_experts"] == 256 and kimi["moe"]["num_experts"] == 384
    assert kimi["moe"]["shared_experts"] == 1 and kimi["layer_kinds"]["dense_mlp"] == 1
    assert list(hf_home.rglob("*")) == []  # nothing written under HF_HOME


def test_catalog_matches_the_shared_config(hf_home: Path, configs_dir: Path) -> None:
    """The offline answer for a Hub id equals what the reader derives from that model's config file."""
    proc = run("moonshotai/Kimi-K2.5", "--json", hf_home=hf_home)
    doc = json.loads(proc.stdout)[0]
    arch = read_config(read_json_file(configs_dir / "moonshotai--Kimi-K2.5.json"), name="k")
    assert (doc["total_params"], doc["active_params"], doc["weight_bytes"]) == (
        arch.total_params, arch.active_params, round(arch.weight_bytes))


def test_alias_resolves_offline(hf_home: Path) -> None:
    proc = run("Kimi-K2.5", "--json", hf_home=hf_home)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["source"] == "catalog:moonshotai/Kimi-K2.5"


def test_human_table(hf_home: Path) -> None:
    proc = run("MiniMaxAI/MiniMax-M2.5", hf_home=hf_home)
    assert proc.returncode == 0, proc.stderr
    assert "MiniMaxAI/MiniMax-M2.5" in proc.stdout and "256 top-8" in proc.stdout


@pytest.mark.parametrize("file", sorted(p.name for p in CONFIGS.glob("*.json")))
def test_every_shared_config_inspects(hf_home: Path, file: str) -> None:
    path = CONFIGS / file
    proc = run(str(path), "--json", hf_home=hf_home)
    assert proc.returncode == 0, proc.stderr
    (doc,) = json.loads(proc.stdout)
    assert doc["source"] == f"local:{path}"
    assert FIELDS <= set(doc)
    raw = json.loads(path.read_text())
    text = raw.get("text_config", raw)
    assert doc["num_layers"] == text.get("num_hidden_layers", len(text.get("layers_block_type", [])))
    assert doc["total_params"] > 0 and doc["weight_bytes"] > 0


def test_relative_path_and_folder(hf_home: Path, tmp_path: Path, configs_dir: Path) -> None:
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_bytes((configs_dir / "meta-llama--Llama-3.1-8B.json").read_bytes())
    for ref, cwd in ((str(folder), REPO), ("./llama", tmp_path), ("llama/config.json", tmp_path)):
        proc = run(ref, "--json", hf_home=hf_home, cwd=cwd)
        assert proc.returncode == 0, (ref, proc.stderr)
        assert json.loads(proc.stdout)[0]["num_layers"] == 32


# ---- 6. bad input via the CLI -----------------------------------------------------------------------

def _llama_with(configs_dir: Path, **changes: Any) -> str:
    data = json.loads((configs_dir / "meta-llama--Llama-3.1-8B.json").read_text())
    for key, value in changes.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


@pytest.mark.parametrize(("content", "says"), [
    ('{"hidden_size": 4096, "num_hidden_', "invalid JSON"),
    ("not json at all", "invalid JSON"),
    ("", "file is empty"),
    ("[1, 2]", "expected a JSON object"),
    ("missing_layers", "'num_hidden_layers'"),
    ("negative", "'hidden_size' = -1"),
    ("text", "'num_attention_heads' must be an integer"),
    ("zero_heads", "'num_attention_heads' = 0"),
    ("absurd", "'hidden_size' = 1000000000000"),
])
def test_bad_config_file(hf_home: Path, tmp_path: Path, configs_dir: Path, content: str, says: str) -> None:
    variants = {
        "missing_layers": _llama_with(configs_dir, num_hidden_layers=...),
        "negative": _llama_with(configs_dir, hidden_size=-1),
        "text": _llama_with(configs_dir, num_attention_heads="32"),
        "zero_heads": _llama_with(configs_dir, num_attention_heads=0),
        "absurd": _llama_with(configs_dir, hidden_size=10**12),
    }
    path = tmp_path / "config.json"
    path.write_text(variants.get(content, content))
    line = _one_error_line(run(str(path), "--json", hf_home=hf_home))
    assert str(path) in line and says in line


def test_folder_without_config(hf_home: Path, tmp_path: Path) -> None:
    line = _one_error_line(run(str(tmp_path), hf_home=hf_home))
    assert str(tmp_path) in line and "no config.json" in line


@pytest.mark.parametrize("ref", ["/no/such/config.json", "../x/y", "a/b/../c"])
def test_missing_paths_and_path_like_ids(hf_home: Path, ref: str) -> None:
    line = _one_error_line(run(ref, hf_home=hf_home))
    assert ref in line and "no such file or directory" in line
    assert list(hf_home.rglob("*")) == []


def test_unknown_repo_offline(hf_home: Path) -> None:
    line = _one_error_line(run("nosuchorg/nosuch-model-xyz", "--json", hf_home=hf_home))
    assert "nosuchorg/nosuch-model-xyz" in line and "catalog" in line
    assert list(hf_home.rglob("*")) == []


def test_remote_code_config_is_read_not_run(hf_home: Path, tmp_path: Path, configs_dir: Path) -> None:
    marker = tmp_path / "executed"
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (folder / "configuration_evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (folder / "config.json").write_text(_llama_with(
        configs_dir, auto_map={"AutoConfig": "configuration_evil.C", "AutoModelForCausalLM": "modeling_evil.M"},
        trust_remote_code=True))
    proc = run(str(folder), "--json", hf_home=hf_home, cwd=folder, process=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["num_layers"] == 32
    assert not marker.exists()
