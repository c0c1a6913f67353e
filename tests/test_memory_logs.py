"""The memory model against public start-up logs (tests/data/logs, research/logcheck.py), the README's table
of them (scripts/memory_logs.py), the case-study fit facts, and `advisor fit` speaking the log's language."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, catalog_arch, cli

from advisor.cost.budget import FITTED
from advisor.cost.engine_args import resolve
from advisor.cost.memory import memory_fit
from advisor.cost.plan import Plan
from advisor.cost.weights import requantize
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile
from research.logcheck import TOLERANCE, fit_constants, leave_one_out, load_logs, replay

LOGS = REPO / "tests" / "data" / "logs" / "logs.json"
SCRIPT = "scripts.memory_logs"  # run as `python -m` from the repo root
ENTRIES = load_logs(LOGS)
PREDICTED = [e for e in ENTRIES if not e.not_predicted]
GiB = 2**30


@pytest.mark.parametrize("entry", [e for e in PREDICTED if not e.miss], ids=lambda e: e.id)
def test_log_is_predicted_within_tolerance(entry: Any) -> None:
    r = replay(entry, REPO)
    assert r.holds, f"{entry.id}: logged {r.logged}, predicted {r.predicted} ({r.metric})"


@pytest.mark.parametrize("entry", [e for e in PREDICTED if e.miss], ids=lambda e: e.id)
def test_a_named_miss_does_miss(entry: Any) -> None:
    # the README says why these miss; if one starts to hold, the reason is stale
    r = replay(entry, REPO)
    assert r.holds is False and r.error is not None and abs(r.error) > TOLERANCE


def test_at_least_ten_logs_hold_on_their_kv_cache() -> None:
    held = [e.id for e in PREDICTED if (r := replay(e, REPO)).holds and r.metric in ("tokens", "KV GiB")]
    assert len(held) >= 10, held
    # and they span the releases modelled and both engines
    assert {e.engine_version for e in PREDICTED if e.id in held} >= {"0.11", "0.16", "0.19", "0.20", "0.27", "0.5"}


def test_logs_state_their_conditions_and_sources() -> None:
    assert len(ENTRIES) >= 10 and len({e.id for e in ENTRIES}) == len(ENTRIES)
    for e in ENTRIES:
        assert e.source and e.lines and e.logged, e.id
        assert e.not_predicted or e.hardware, e.id
        assert not (e.miss and e.not_predicted), e.id
    text = LOGS.read_text()
    # the README stands alone: no path that climbs out of the repository or names this machine's folders
    assert not re.search(r"\.\./|/work/", text)


def test_verbatim_lines_carry_the_logged_numbers() -> None:
    # what the table compares against is what the quoted lines print
    for e in ENTRIES:
        joined = " ".join(e.lines).replace(",", "")
        if "kv_tokens" in e.logged and e.kind == "verbatim_log":
            assert str(e.logged["kv_tokens"]) in joined, e.id
        if "available_kv_gib" in e.logged and e.kind == "verbatim_log" and "Available KV" in joined:
            assert f"{e.logged['available_kv_gib']:.2f}".rstrip("0").rstrip(".") in joined, e.id


def test_constants_are_the_fit_on_the_measured_rows() -> None:
    # fitted once on llm-d's per-term columns: the shipped constants are that fit
    refit = fit_constants(ENTRIES, REPO)
    assert refit.sort_temp_bytes == pytest.approx(FITTED.sort_temp_bytes, abs=0.01)
    assert refit.non_torch_base_bytes == pytest.approx(FITTED.non_torch_base_bytes, rel=1e-3)
    assert refit.nccl_peer_bytes == pytest.approx(FITTED.nccl_peer_bytes, rel=1e-3)
    # torch.sort's temporaries come to about five fp32 elements per sampler element
    assert 4.5 < FITTED.sort_temp_bytes / 4 < 5.5


def test_leave_one_out_holds() -> None:
    loo = leave_one_out(ENTRIES, REPO)
    assert set(loo) == {"L13", "L14", "L15", "L16", "L17", "L18"}
    assert all(r.holds for r in loo.values()), {k: r.error for k, r in loo.items()}


@pytest.fixture(scope="module")
def script_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`python -m scripts.memory_logs --update FILE` once, on a file with a stale block: its output (the table it
    prints with or without --update) and FILE."""
    readme = tmp_path_factory.mktemp("memory_logs") / "README.md"
    readme.write_text("head\n<!-- memory-logs:start -->\nSTALE BLOCK\n<!-- memory-logs:end -->\ntail\n")
    done = subprocess.run([sys.executable, "-m", SCRIPT, "--update", str(readme)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    return done, readme


@pytest.mark.xdist_group("memory_logs_script")  # one run of the script (`script_run`)
def test_readme_block_is_current(script_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, _ = script_run
    assert done.returncode == 0, done.stderr
    from scripts.readme_block import read_block

    block = read_block("memory-logs")  # docs/accuracy.md
    assert block == done.stdout, "stale: run python -m scripts.memory_logs --update"
    rows = [ln for ln in done.stdout.splitlines() if re.match(r"\| [LKG]\d\d ", ln)]
    assert len(rows) == len(ENTRIES)
    for ln in rows:  # every row says it holds, why it misses, or why it is not predicted
        assert re.search(r"within 10%|same fit verdict|misses: \S|not predicted: \S", ln), ln


@pytest.mark.xdist_group("memory_logs_script")  # one run of the script (`script_run`)
def test_script_writes_between_the_markers(script_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    done, readme = script_run
    assert done.returncode == 0, done.stderr
    text = readme.read_text()
    assert text.startswith("head\n<!-- memory-logs:start -->\nPublic start-up logs") and text.endswith("tail\n")
    assert "STALE BLOCK" not in text


# --- deliverable 4: fit and no fit at the boundary, with the term that tips it ------------------------------


def fit(model: str, plan: Plan, hw: HardwareProfile, **settings: Any) -> Any:
    a = catalog_arch(model)
    s = Settings(**settings)
    return memory_fit(a, plan, hw, resolve(s, a, plan, hw), requantize(a, s.weight_dtype))


@pytest.mark.parametrize("version", ["0.11", "0.16", "0.19", "0.20", "0.27", "0.33"])
def test_case_study_facts_hold_in_every_release(hw: HardwareProfile, version: str) -> None:
    tp2 = fit("MiniMaxAI/MiniMax-M2.5", Plan(tp=2), hw, engine_version=version)
    assert not tp2.fits and tp2.reason is not None and tp2.reason.startswith("weights")
    tp4 = fit("MiniMaxAI/MiniMax-M2.5", Plan(tp=4), hw, engine_version=version)
    assert tp4.fits and tp4.gpu_kv_cache_tokens > 0
    kimi = fit("moonshotai/Kimi-K2.5", Plan(tp=4), hw, engine_version=version)
    assert not kimi.fits and kimi.reason is not None and "weights" in kimi.reason
    assert fit("moonshotai/Kimi-K2.5", Plan(tp=8), hw, engine_version=version).fits


def test_reason_names_the_term_that_tips_it(hw: HardwareProfile) -> None:
    # MiniMax TP4 (0.16, sorting sampler) with a budget between weights + non-torch and + the activation peak
    base = fit("MiniMaxAI/MiniMax-M2.5", Plan(tp=4), hw, engine_version="0.16").budget
    util = (base.weights + base.non_torch + base.activation / 2) / base.capacity
    m = fit("MiniMaxAI/MiniMax-M2.5", Plan(tp=4), hw, engine_version="0.16", gpu_memory_utilization=util)
    assert not m.fits and m.reason is not None
    assert "tipped by the activation peak of the start-up profile (sampler warm-up)" in m.reason
    # and the graph estimate when it is the last straw (0.33)
    new = fit("MiniMaxAI/MiniMax-M2.5", Plan(tp=4), hw).budget
    util = (new.requested - new.available_kv - new.cudagraph / 2) / new.capacity
    m = fit("MiniMaxAI/MiniMax-M2.5", Plan(tp=4), hw, gpu_memory_utilization=util)
    assert m.reason is not None and "tipped by the CUDA-graph estimate" in m.reason


def test_kv_room_shrinks_by_the_engine_terms(hw: HardwareProfile) -> None:
    # the KV room the timing model reads is the budget less every non-KV term
    m = fit("moonshotai/Kimi-K2.5", Plan(tp=8), hw)
    b = m.budget
    assert m.kv_cache_bytes == pytest.approx(b.requested - b.weights - b.activation - b.non_torch - b.cudagraph)
    assert m.overhead_bytes == b.non_torch + b.cudagraph


# --- `advisor fit` in the log's language --------------------------------------------------------------------


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """`advisor ARGS` offline, in this process (`conftest.cli`: what `python -m advisor.cli` gives)."""
    return cli(*args, env={"HF_HUB_OFFLINE": "1", "COLUMNS": "200"}, cwd=REPO)


def test_fit_prints_the_four_log_lines() -> None:
    done = run("fit", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--engine-version", "0.16", "--max-model-len", "196608")
    assert done.returncode == 0, done.stderr
    m = fit("MiniMaxAI/MiniMax-M2.5", Plan(tp=4), _hw(), engine_version="0.16", max_model_len=196608)
    assert f"Model loading took {m.weights_bytes / GiB:.2f} GiB memory" in done.stdout
    assert f"Available KV cache memory: {m.available_kv_bytes / GiB:.2f} GiB" in done.stdout
    assert f"GPU KV cache size: {m.gpu_kv_cache_tokens:,} tokens" in done.stdout
    assert f"Maximum concurrency for 196,608 tokens per request: {m.concurrency:.2f}x" in done.stdout
    # the L01 log of this configuration prints 53.75 GiB, 23.62 GiB, 399,424 tokens, 2.03x
    assert abs(m.gpu_kv_cache_tokens / 399424 - 1) < TOLERANCE


def test_fit_json_carries_each_term() -> None:
    done = run("fit", "moonshotai/Kimi-K2.5", "--tp", "8", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)[0]
    pg, log = doc["per_gpu"], doc["startup_log"]
    for key in ("sampler_bytes", "forward_bytes", "persistent_bytes", "non_torch_bytes", "cudagraph_bytes",
                "pre_snapshot_bytes", "weights_bytes", "kv_cache_bytes", "capacity_bytes", "budget_bytes"):
        assert isinstance(pg[key], int), key
    assert pg["overhead_bytes"] == pytest.approx(pg["non_torch_bytes"] + pg["cudagraph_bytes"], abs=1)
    assert log["engine"] == "vllm" and log["engine_version"] == "0.30-0.33"
    assert log["available_kv_cache_gib"] == pytest.approx(pg["kv_cache_bytes"] / GiB, abs=0.01)
    assert log["gpu_kv_cache_tokens"] == doc["kv_cache_tokens"]
    assert len(log["lines"]) == 4 and log["lines"][2].startswith("GPU KV cache size:")


def test_fit_sglang_speaks_sglang() -> None:
    done = run("fit", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--engine", "sglang", "--json")
    assert done.returncode == 0, done.stderr
    log = json.loads(done.stdout)[0]["startup_log"]
    assert log["engine"] == "sglang" and log["lines"][1].startswith("KV Cache is allocated. #tokens:")


@pytest.mark.parametrize("version", ["0.34", "0.9", "x.y"])
def test_unmodelled_engine_version_is_one_line_exit_2(version: str) -> None:
    done = run("fit", "MiniMaxAI/MiniMax-M2.5", "--tp", "4", "--engine-version", version)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "--engine-version" in done.stderr


def _hw() -> HardwareProfile:
    from advisor.hardware import load_profile

    return load_profile("rtx-pro-6000-server")
