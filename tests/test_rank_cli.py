"""`advisor rank` (and the fit/predict contract bits it relies on) through the real CLI (`advisor.cli.main`, in this
process; the import cost of its start in a new one), offline."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import cli

from advisor import catalog

MINIMAX, KIMI = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"
PREDICT_FIELDS = ("model", "hardware", "plan", "fits", "ttft_ms", "tpot_ms", "per_user_tok_s", "output_tok_s",
                  "allreduce_bytes_per_token", "wire_bytes_per_token", "collectives_per_step", "comm_ms_per_step",
                  "breakdown_ms", "bottleneck", "calibrated", "interval")


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hf_home")  # empty cache: a fresh install


def run(hf_home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`advisor ARGS` offline, in this process (`conftest.cli`: what `python -m advisor.cli` gives)."""
    return cli(*args, env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(hf_home), "COLUMNS": "250", "ADVISOR_DEBUG": None},
               cwd=cwd)


def run_json(hf_home: Path, *args: str) -> Any:
    r = run(hf_home, *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_one_line_error(r: subprocess.CompletedProcess[str], flag: str) -> None:
    """Exit 2, no traceback, and one line naming the flag: our own error, or click's usage error (usage line,
    help hint, then `Error: Invalid value for '--flag'`) when typer rejects the value itself."""
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    if lines[0].startswith("Usage:"):
        assert lines[-1].startswith("Error:") and flag in lines[-1], r.stderr
    else:
        assert len(lines) == 1 and lines[0].startswith("advisor: error:"), r.stderr
        assert flag in lines[0]


@pytest.mark.parametrize("args", [("--objective", "latency"), ("--objective", "throughput", "--concurrency", "128")])
def test_minimax_beats_kimi(hf_home: Path, args: tuple[str, ...]) -> None:
    rows = run_json(hf_home, "rank", MINIMAX, KIMI, *args)
    assert [d["model"] for d in rows] == [MINIMAX, KIMI]
    assert [d["rank"] for d in rows] == [1, 2]
    assert rows[0]["score"] > rows[1]["score"] > 0
    for d in rows:
        assert d["fits"] and d["why"] and d["plan"]["label"]
        p, argv = d["plan"], d["commands"][0]["argv"]  # the first replica's server
        assert argv[:3] == ["vllm", "serve", d["model"]]
        assert argv[argv.index("--tensor-parallel-size") + 1] == str(p["tp"])
        assert f"--max-model-len {d['max_model_len']}" in d["command"]
        assert ("--enable-expert-parallel" in d["command"]) == (p["ep"] > 1)
        assert (f"--data-parallel-size {p['dp']}" in d["command"]) == (p["dp"] > 1)
        assert all(k in d for k in PREDICT_FIELDS)
    if args[1] == "latency":
        assert all(d["workload"]["concurrency"] == 1 and d["score"] == d["per_user_tok_s"] for d in rows)
    else:
        dep = [d["deployment"] for d in rows]  # the load is the whole deployment's, its tok/s every replica's
        assert all(x["users"] == 128 and d["score"] == x["output_tok_s"] for d, x in zip(rows, dep, strict=True))


def test_human_output_explains_constraints(hf_home: Path) -> None:
    r = run(hf_home, "rank", MINIMAX, KIMI)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    tp8 = [ln for ln in out.splitlines() if "TP8:" in ln and MINIMAX not in ln]
    assert any("192" in ln and "128" in ln and "EP" in ln for ln in tp8), out
    kimi = out[out.index(f"2. {KIMI}"):]
    assert "needs all 8 GPUs" in kimi
    assert "--tensor-parallel-size 4" in out[out.index(f"1. {MINIMAX}"):out.index(f"2. {KIMI}")]


def test_sglang_command(hf_home: Path) -> None:
    rows = run_json(hf_home, "rank", MINIMAX, KIMI, "--engine", "sglang")
    for d in rows:
        assert f"python -m sglang.launch_server --model-path {d['model']}" in d["command"]
        assert "vllm" not in d["command"]


def test_whole_catalog(hf_home: Path) -> None:
    rows = run_json(hf_home, "rank")
    ids = catalog.ids()
    assert sorted(d["model"] for d in rows) == sorted(ids)
    ranked = [d for d in rows if d["rank"] is not None]
    tail = [d for d in rows if d["rank"] is None]
    assert ranked and rows[:len(ranked)] == ranked  # unfit ones last
    assert [d["rank"] for d in ranked] == list(range(1, len(ranked) + 1))
    assert all(not d["fits"] and d["reason"] for d in tail)
    scores = [d["score"] for d in ranked]
    assert scores == sorted(scores, reverse=True)


def test_all_plans(hf_home: Path) -> None:
    rows = run_json(hf_home, "rank", MINIMAX, KIMI, "--all-plans")
    for m in (MINIMAX, KIMI):
        plans = [d["plan"]["label"] for d in rows if d["model"] == m]
        assert len(plans) > 1 and len(set(plans)) == len(plans)
    best = run_json(hf_home, "rank", MINIMAX, KIMI)
    assert rows[0]["plan"] == best[0]["plan"] and rows[0]["score"] == best[0]["score"]


def test_csv(hf_home: Path) -> None:
    r = run(hf_home, "rank", MINIMAX, KIMI, "--csv")
    assert r.returncode == 0, r.stderr
    table = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [t["model"] for t in table] == [MINIMAX, KIMI]
    assert all(t["command"].startswith(("vllm serve", "CUDA_VISIBLE_DEVICES")) for t in table)
    assert float(table[0]["score"]) > float(table[1]["score"])


def test_unknown_models_are_reported_and_the_rest_ranked(hf_home: Path) -> None:
    rows = run_json(hf_home, "rank", MINIMAX, "no-such-org/no-such-model", KIMI)
    assert [d["model"] for d in rows if d["rank"]] == [MINIMAX, KIMI]
    bad = [d for d in rows if d["model"] == "no-such-org/no-such-model"]
    assert len(bad) == 1 and bad[0]["rank"] is None and "catalog" in bad[0]["reason"]
    r = run(hf_home, "rank", MINIMAX, "no-such-org/no-such-model")
    assert r.returncode == 0 and "no-such-org/no-such-model" in r.stdout


def test_all_unknown_is_exit_2(hf_home: Path) -> None:
    r = run(hf_home, "rank", "no-such-org/a", "no-such-org/b")
    assert_one_line_error(r, "no-such-org/a")
    assert "no-such-org/b" in r.stderr


def test_goodput_needs_a_limit(hf_home: Path) -> None:
    assert_one_line_error(run(hf_home, "rank", MINIMAX, KIMI, "--objective", "goodput"), "--max-tpot-ms")


@pytest.mark.parametrize("limit", [20.0, 50.0])
def test_goodput_respects_tpot_limit(hf_home: Path, limit: float) -> None:
    rows = run_json(hf_home, "rank", MINIMAX, KIMI, "--objective", "goodput", "--max-tpot-ms", str(limit),
                    "--concurrency", "256")
    ranked = sorted((d for d in rows if d["rank"]), key=lambda d: d["rank"])
    assert ranked and ranked[0]["meets"]
    # every plan that meets the limit ranks before every plan that misses it, and says by how much it misses
    assert [d["meets"] for d in ranked] == sorted((d["meets"] for d in ranked), reverse=True)
    for d in ranked:
        if not d["meets"]:
            assert d["tpot_ms"] > limit and d["miss"] == pytest.approx(d["tpot_ms"] / limit, rel=1e-6)
            continue
        assert d["tpot_ms"] <= limit
        assert d["deployment"]["users"] <= 256
        assert d["score"] == pytest.approx(d["deployment"]["output_tok_s"])  # every replica's tok/s


@pytest.mark.parametrize(("args", "flag"), [
    (("rank", MINIMAX, KIMI, "--concurrency", "0"), "--concurrency"),
    (("rank", MINIMAX, "--input-len", "300000"), "--input-len"),
    (("rank", MINIMAX, KIMI, "--gpu-memory-utilization", "1.5"), "--gpu-memory-utilization"),
    (("rank", MINIMAX, "--objective", "fastest"), "--objective"),
    (("rank", MINIMAX, "--plot", "x.txt"), "--plot"),
    (("predict", MINIMAX, "--tp", "0"), "--tp"),
])
def test_bad_values_are_one_line(hf_home: Path, tmp_path: Path, args: tuple[str, ...], flag: str) -> None:
    assert_one_line_error(run(hf_home, *args, cwd=tmp_path), flag)  # a relative --plot would land in tmp_path


def test_long_prompt_gets_a_serve_length_that_holds_it(hf_home: Path) -> None:
    rows = run_json(hf_home, "rank", KIMI, "--input-len", "100000", "--output-len", "1000")
    assert rows[0]["max_model_len"] >= 101000
    assert f"--max-model-len {rows[0]['max_model_len']}" in rows[0]["command"]


def test_fit_without_model_lists_the_catalog(hf_home: Path) -> None:
    docs = run_json(hf_home, "fit", "--tp", "4")
    assert sorted(d["model"] for d in docs) == sorted(catalog.ids())
    assert all(d["plan"]["tp"] == 4 for d in docs)



def test_weight_dtype_is_the_one_served(hf_home: Path) -> None:
    """`weight_dtype` reports what `--weight-dtype` re-quantized to, with the weight bytes that go with it
    (Llama-3.1-70B BF16 at TP8: 70.6B params / 8 ~ 17.6 GB per GPU; FP8 about half)."""
    own, fp8 = (run_json(hf_home, "fit", "meta-llama/Llama-3.1-70B", "--hw", "h100-sxm", "--tp", "8", *extra)[0]
                for extra in ((), ("--weight-dtype", "fp8")))
    assert (own["weight_dtype"], fp8["weight_dtype"]) == ("bf16", "fp8")
    assert fp8["per_gpu"]["weights_bytes"] < 0.6 * own["per_gpu"]["weights_bytes"]
    text = run(hf_home, "predict", "meta-llama/Llama-3.1-70B", "--hw", "h100-sxm", "--tp", "8", "--weight-dtype", "fp8")
    assert text.returncode == 0 and "(fp8)" in text.stdout

def test_predict_has_every_design_field(hf_home: Path) -> None:
    d = run_json(hf_home, "predict", MINIMAX, "--tp", "4", "--concurrency", "8")
    missing = [k for k in PREDICT_FIELDS if k not in d]
    assert not missing
    assert set(d["breakdown_ms"]) == {"weights", "kv", "compute", "comm", "overhead"}
    assert d["plan"]["tp"] == 4 and d["fits"]
    assert d["output_tok_s"] == pytest.approx(d["per_user_tok_s"] * d["running_sequences"], rel=0.05)


def test_cli_start_does_not_import_heavy_modules() -> None:
    code = ("import sys, advisor.cli; "
            "print(','.join(m for m in ('scipy', 'matplotlib', 'huggingface_hub') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def test_trtllm_fit_speaks_its_start_up_log(hf_home: Path) -> None:
    """`advisor fit --engine trtllm` prints TensorRT-LLM's own KV lines (`KvCacheCreator`, `kvCacheManager.cpp`):
    DeepSeek-V3 at TP8 on B200, 0.9 of what the profile leaves: more KV than vLLM's 0.92 of the device total."""
    trt, vllm = (run_json(hf_home, "fit", "deepseek-ai/DeepSeek-V3", "--hw", "b200-sxm", "--tp", "8", "--engine", e)[0]
                 for e in ("trtllm", "vllm"))
    log = trt["startup_log"]
    assert log["engine"] == "trtllm" and log["engine_version"] == "1.0-1.2"
    assert log["lines"][0] == f"Estimated max memory in KV cache : {log['available_kv_cache_gib']:.2f} GiB"
    assert log["lines"][1].endswith(f"for max tokens in paged KV cache ({log['gpu_kv_cache_tokens']}).")
    assert trt["per_gpu"]["weights_bytes"] == vllm["per_gpu"]["weights_bytes"]
    assert trt["kv_cache_tokens"] > vllm["kv_cache_tokens"]
