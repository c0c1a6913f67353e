"""Issue #11 items 7-8: the printed serve command produces what was predicted (or says what it needs), for vLLM
and SGLang, with every flag that shaped the prediction."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

MINIMAX, QWEN32, QWEN_MOE = "MiniMaxAI/MiniMax-M2.5", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B"


def _rank(advisor, *args: str) -> list[dict]:
    r = advisor("rank", *args, "--json")
    assert r.code == 0, r.err
    return [d for d in json.loads(r.out) if d["rank"] is not None]


def _flag(command: str, flag: str) -> str | None:
    m = re.search(rf"(?:^| ){re.escape(flag)}(?: (\S+))?(?= |$)", command)
    return None if m is None else (m.group(1) or "")


def test_dynamic_fp8_is_in_the_command_and_in_the_prediction(advisor) -> None:
    (bf16,) = _rank(advisor, QWEN32)
    (fp8,) = _rank(advisor, QWEN32, "--weight-dtype", "fp8")
    assert _flag(bf16["command"], "--quantization") is None
    assert _flag(fp8["command"], "--quantization") == "fp8"
    assert fp8["command_notes"] == []  # a BF16 checkpoint, FP8 native on the RTX PRO 6000: nothing else needed
    per_param = fp8["per_gpu"]["weights_bytes"] * fp8["plan"]["tp"] / (bf16["per_gpu"]["weights_bytes"]
                                                                       * bf16["plan"]["tp"])
    assert 0.5 < per_param < 0.6  # linear layers at 1 byte, embeddings and norms at 2


@pytest.mark.parametrize("dtype", ["nvfp4", "mxfp4", "int4"])
def test_formats_without_an_online_path_need_a_pre_quantized_checkpoint(advisor, dtype: str) -> None:
    (d,) = _rank(advisor, QWEN32, "--weight-dtype", dtype)
    assert _flag(d["command"], "--quantization") is None
    note = d["command_notes"][0]
    assert note.startswith(f"needs a pre-quantized {dtype.upper()} checkpoint of {QWEN32}")
    assert "vLLM cannot produce" in note and "runs bf16, fp8, fp4 natively" in note
    assert ("weight-only" in note) == (dtype != "nvfp4")  # INT4 and MXFP4 keep BF16 activations


def test_a_gpu_without_fp4_runs_nvfp4_weight_only(advisor) -> None:
    (d,) = _rank(advisor, QWEN32, "--weight-dtype", "nvfp4", "--hw", "h100-sxm")
    note = d["command_notes"][0]
    assert "runs bf16, fp8 natively" in note and "NVFP4 only through a weight-only path" in note


def test_a_quantized_checkpoint_is_not_requantized_at_load(advisor) -> None:
    (same,) = _rank(advisor, MINIMAX, "--weight-dtype", "fp8")  # MiniMax-M2.5 is block-FP8 already
    notes = [n for n in same["command_notes"] if "one per replica" not in n]  # (the replicas' router note)
    assert _flag(same["command"], "--quantization") is None and notes == []
    (back,) = _rank(advisor, MINIMAX, "--weight-dtype", "bf16")
    assert back["command_notes"][0].startswith(f"needs the BF16 checkpoint of {MINIMAX}")


def test_sglang_nvfp4_online_only_for_moe_experts(advisor) -> None:
    rows = {d["model"]: d for d in _rank(advisor, QWEN_MOE, QWEN32, "--weight-dtype", "nvfp4", "--engine", "sglang")}
    assert _flag(rows[QWEN_MOE]["command"], "--quantization") == "nvfp4_online"
    assert _flag(rows[QWEN32]["command"], "--quantization") is None  # a dense model keeps its layers
    assert rows[QWEN32]["command_notes"][0].startswith("needs a pre-quantized NVFP4 checkpoint")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_flag_that_shaped_the_prediction_is_in_the_command(advisor, engine: str) -> None:
    (d,) = _rank(advisor, MINIMAX, "--engine", engine, "--gpu-memory-utilization", "0.85", "--kv-cache-dtype", "fp8",
                 "--max-model-len", "65536")
    cmd, dp = d["command"], d["plan"]["dp"]
    assert d["max_model_len"] == 65536 and d["kv_cache_dtype"] == "fp8"
    if engine == "vllm":
        assert cmd.startswith(("vllm serve", "CUDA_VISIBLE_DEVICES"))
        assert _flag(cmd, "--gpu-memory-utilization") == "0.85"
        assert _flag(cmd, "--max-model-len") == "65536"
        assert _flag(cmd, "--kv-cache-dtype") == "fp8"
        assert _flag(cmd, "--max-num-seqs") == "1024"  # vLLM's default on >= 70 GiB GPUs, per DP engine
        assert _flag(cmd, "--max-num-batched-tokens") == "8192"
    else:
        assert "python -m sglang.launch_server" in cmd and "vllm" not in cmd
        assert _flag(cmd, "--mem-fraction-static") == "0.85"
        assert _flag(cmd, "--context-length") == "65536"
        assert _flag(cmd, "--kv-cache-dtype") == "fp8_e4m3"
        assert _flag(cmd, "--max-running-requests") == str(1024 * dp)  # SGLang divides it by the DP size
        assert _flag(cmd, "--chunked-prefill-size") == str(8192 * dp)
    assert _flag(cmd, "--trust-remote-code") == ""  # MiniMax-M2.5's config.json declares auto_map


def test_no_trust_remote_code_without_auto_map(advisor) -> None:
    for engine in ("vllm", "sglang"):
        (d,) = _rank(advisor, QWEN32, "--engine", engine)
        assert "--trust-remote-code" not in d["command"]


def test_sglang_dp_attention_counts_every_gpu_in_tp_size(advisor) -> None:
    rows = [d for d in _rank(advisor, MINIMAX, "--engine", "sglang", "--all-plans") if d["plan"]["dp"] > 1]
    assert rows
    for d in rows:
        p = d["plan"]
        assert _flag(d["command"], "--tp-size") == str(p["tp"] * p["dp"])
        assert _flag(d["command"], "--dp-size") == str(p["dp"]) and "--enable-dp-attention" in d["command"]


def test_human_output_prints_the_notes_under_the_command(advisor) -> None:
    r = advisor("rank", QWEN32, "--weight-dtype", "nvfp4")
    assert r.code == 0
    lines = r.out.splitlines()
    run = next(i for i, ln in enumerate(lines) if ln.strip().startswith("run:"))
    assert lines[run + 1].strip().startswith("note: needs a pre-quantized NVFP4 checkpoint")


def test_trtllm_serve_with_attention_dp_and_an_fp8_cache(advisor) -> None:
    """`trtllm-serve` (TensorRT-LLM `commands/serve.py`): --tp_size counts every GPU, attention DP and the KV dtype
    go in the `--extra_llm_api_options` YAML, written by the same pasteable line, whose `kv_cache_config` restates
    the memory fraction (it replaces the one the flags build); the file bash writes is what the server reads."""
    import subprocess

    kimi = "moonshotai/Kimi-K2.5"
    rows = [d for d in _rank(advisor, kimi, "--engine", "trtllm", "--all-plans", "--kv-cache-dtype", "fp8",
                             "--gpu-memory-utilization", "0.8") if d["plan"]["dp"] > 1]
    assert rows and all(d["plan"]["tp"] == 1 for d in rows)  # its attention DP spans every rank
    d = rows[0]
    cmd, p = d["command"], d["plan"]
    (launch,) = d["commands"]
    assert launch["argv"][:2] == ["trtllm-serve", kimi] and launch["line"] == cmd
    assert _flag(cmd, "--tp_size") == str(p["dp"]) and _flag(cmd, "--kv_cache_free_gpu_memory_fraction") == "0.8"
    assert _flag(cmd, "--max_num_tokens") == "8192" and _flag(cmd, "--max_batch_size") == "2048"
    assert (_flag(cmd, "--ep_size") == str(p["ep"])) == (p["ep"] > 1) and "--trust_remote_code" in cmd
    write = cmd.split(" && ")[0]  # printf '%s\n' LINES... > extra_llm_api_options.yaml
    assert _flag(cmd, "--extra_llm_api_options") == "extra_llm_api_options.yaml"
    yaml = subprocess.run(["bash", "-c", write.split(" > ")[0]], capture_output=True, text=True, check=True).stdout
    assert yaml.splitlines() == ["enable_attention_dp: true", "kv_cache_config:", "  dtype: fp8",
                                 "  free_gpu_memory_fraction: 0.8"]


def test_trtllm_refuses_what_it_cannot_form(advisor) -> None:
    """TensorRT-LLM 1.0-1.2: no block-FP8 kernels on SM120 (MiniMax-M2.5 on the RTX PRO 6000 box), no TP beside
    attention DP; vLLM runs both."""
    r = advisor("predict", MINIMAX, "--tp", "4", "--engine", "trtllm", "--json")
    assert r.code == 0 and not json.loads(r.out)["fits"]
    assert "no block-FP8 kernels for SM120" in json.loads(r.out)["reason"]
    r = advisor("predict", "openai/gpt-oss-120b", "--tp", "2", "--dp", "4", "--ep", "8", "--engine", "trtllm", "--json")
    assert "attention DP spans every rank" in json.loads(r.out)["reason"]
    assert json.loads(advisor("predict", MINIMAX, "--tp", "4", "--json").out)["fits"]
    r = advisor("predict", MINIMAX, "--engine", "trtllm", "--engine-version", "0.33")
    assert r.code == 2 and "not a modelled trtllm release" in r.err and len(r.err.strip().splitlines()) == 1


def test_a_config_file_is_not_what_the_engine_serves(advisor, monkeypatch: pytest.MonkeyPatch) -> None:
    # no engine serves a config.json file: the command names its folder and says the weights must be there
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # the path as typed at the repo root
    ref = "tests/data/configs/Qwen--Qwen3-8B.json"
    (d,) = _rank(advisor, ref)
    argv = d["commands"][0]["argv"]
    assert argv[:3] == ["vllm", "serve", str((Path(ref)).resolve().parent)] and ref not in argv
    assert any(n.startswith(f"{ref} is a config file") for n in d["command_notes"])
