"""One owner for engine settings (`advisor/cost/engine_args.py: resolve`): for every hardware profile and engine,
what the memory path sized, what the timing path scheduled and the flags the printed command passes all equal
the values written here by hand from the engines' own code, not the resolved object compared with itself.

Expected values (per DP rank, the engine's default release):
- vLLM 0.33 `engine/arg_utils.py: EngineArgs._set_default_args`: device memory (CUDA total) >= 160 GiB -> 16384
  tokens / 1024 sequences; >= 70 GiB and not an A100 -> 8192 / 1024; else 2048 / 256. CUDA graphs up to
  min(2 x max_num_seqs, 512), 1024 on data-center Blackwell (`config/vllm.py: _set_cudagraph_sizes`).
  gpu_memory_utilization 0.92 (`config/cache.py`).
- SGLang v0.5 `memory_hook.py: handle_gpu_memory_settings`: chunked_prefill_size 4096 under 60 GiB, 8192 under
  160 GiB, 16384 above (nvidia-smi MiB); max_running_requests 1024.
- TensorRT-LLM 1.2 `llmapi/llm_args.py`: max_num_tokens 8192, max_batch_size 2048, KV fraction 0.9; decode graphs
  1-31, 32, 64, 128.
"""

from __future__ import annotations

import shlex

import numpy as np
import pytest
from conftest import catalog_arch

from advisor.cost.budget import forward_bytes, sampler_bytes
from advisor.cost.features import Features
from advisor.cost.plan import Plan
from advisor.cost.sweep import make_case
from advisor.cost.workload import Settings
from advisor.decide.command import Serving, serve_command
from advisor.hardware import load_profile

LLAMA8 = "meta-llama/Llama-3.1-8B"

# profile: (vLLM tokens, seqs, largest CUDA graph), SGLang chunked prefill
BY_HAND = {
    "a100-sxm": (2048, 256, 512, 8192),  # 80 GiB but an A100 (PR #17885)
    "b200-sxm": (16384, 1024, 1024, 16384),
    "b300-sxm": (16384, 1024, 1024, 16384),
    "gb200": (16384, 1024, 1024, 16384),
    "gb300": (16384, 1024, 1024, 16384),
    "h100-sxm": (8192, 1024, 512, 8192),
    "h200-sxm": (8192, 1024, 512, 8192),
    "l40s": (2048, 256, 512, 4096),
    "mi300x": (16384, 1024, 512, 16384),
    "rtx-4090": (2048, 256, 512, 4096),
    "rtx-pro-6000-server": (8192, 1024, 512, 8192),
    "rtx-pro-6000-ws": (8192, 1024, 512, 8192),
}


def _expected(hw_id: str, engine: str) -> tuple[int, int, int, float | None]:
    """(max_num_batched_tokens, max_num_seqs, largest CUDA graph, memory share) by hand; share None: SGLang's
    heuristic (checked against the budget the memory path used)."""
    tokens, seqs, graph, sglang_chunk = BY_HAND[hw_id]
    if engine == "vllm":
        return tokens, seqs, graph, 0.92
    if engine == "trtllm":
        return 8192, 2048, 128, 0.9
    return sglang_chunk, 1024, 0, None


def _flags(line: str) -> dict[str, str]:
    """Flag -> value of a printed command, parsed back the way a shell splits it."""
    argv = shlex.split(line.split(" && ")[-1])
    return {a: b for a, b in zip(argv, [*argv[1:], ""], strict=True) if a.startswith("--")}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("hw_id", sorted(BY_HAND))
def test_memory_timing_and_command_agree_with_the_engine(hw_id: str, engine: str) -> None:
    hw, arch = load_profile(hw_id), catalog_arch(LLAMA8)
    tokens, seqs, graph, share = _expected(hw_id, engine)
    case = make_case(arch, Plan(), hw, Settings(engine=engine, max_model_len=8192))  # fits a 24 GB card
    assert case.memory is not None
    budget = case.memory.budget
    # memory: the profile's forward and sampler warm-up ran at those limits (SGLang: no profile run)
    if engine != "sglang":
        assert budget.forward == forward_bytes(arch, Plan(), tokens)
    if engine == "vllm":
        assert budget.sampler == sampler_bytes(min(seqs, tokens), arch.vocab_size, "v2")
    if share is not None:
        assert budget.utilization == share
    # timing: the scheduler's token budget, the running-batch cap and the padding the step model uses
    F = Features.from_flat(case.features()[None, :])
    assert (F.batched_tokens[0], F.num_seqs[0]) == (tokens, seqs)
    if engine != "sglang":
        assert F.graph_max[0] == graph
    # the printed command passes the same values
    line = serve_command(Serving(model=LLAMA8, plan=Plan(), checkpoint_dtype="bf16", remote_code=False), hw,
                         case.args).command
    flags = _flags(line)
    names = {"vllm": ("--max-num-batched-tokens", "--max-num-seqs", "--gpu-memory-utilization"),
             "sglang": ("--chunked-prefill-size", "--max-running-requests", "--mem-fraction-static"),
             "trtllm": ("--max_num_tokens", "--max_batch_size", "--kv_cache_free_gpu_memory_fraction")}[engine]
    assert (int(flags[names[0]]), int(flags[names[1]])) == (tokens, seqs)
    assert float(flags[names[2]]) == pytest.approx(budget.utilization, abs=5e-4)


def test_sglang_graphs_follow_its_batch_size_list() -> None:
    # sglang server_args.py: _generate_cuda_graph_batch_sizes, [1, 2, 4, 8, 12] + range(16, 257, 8) + ...; the RTX
    # PRO 6000 (< 160 GiB) at TP1 captures up to 256, at TP4 up to 512 (memory_hook.py)
    hw, arch = load_profile("rtx-pro-6000-server"), catalog_arch(LLAMA8)
    one = make_case(arch, Plan(), hw, Settings(engine="sglang")).args.cuda_graph_sizes
    four = make_case(arch, Plan(tp=4), hw, Settings(engine="sglang")).args.cuda_graph_sizes
    assert one[:6] == (1, 2, 4, 8, 12, 16) and one[-1] == 256
    assert four[-1] == 512 and 272 in four and 504 not in four


def test_flags_win_and_say_so() -> None:
    hw, arch = load_profile("h100-sxm"), catalog_arch(LLAMA8)
    args = make_case(arch, Plan(), hw, Settings(max_num_seqs=64, gpu_memory_utilization=0.8)).args
    assert (args.max_num_seqs, args.max_num_batched_tokens, args.gpu_memory_utilization) == (64, 8192, 0.8)
    assert args.sources["max_num_seqs"] == "--max-num-seqs" and "arg_utils.py" in args.sources["max_num_batched_tokens"]
    assert max(args.cuda_graph_sizes) == 128  # min(2 x 64, 512)
    eager = make_case(arch, Plan(), hw, Settings(enforce_eager=True)).args
    assert eager.cuda_graph_sizes == () and not eager.profile_cuda_graphs


def test_an_old_vllm_schedules_nothing_ahead() -> None:
    # vLLM's async scheduling is the default from v0.14 (`SchedulerConfig.async_scheduling`)
    hw, arch = load_profile("h100-sxm"), catalog_arch(LLAMA8)
    old = make_case(arch, Plan(), hw, Settings(engine_version="0.12")).features()
    new = make_case(arch, Plan(), hw, Settings()).features()
    F = Features.from_flat(np.stack([old, new]))
    assert F.sched_ahead.tolist() == [0.0, 1.0]


def test_predict_json_shows_the_resolved_settings(advisor) -> None:
    r = advisor("predict", LLAMA8, "--hw", "a100-sxm", "--tp", "1", "--json")
    assert r.code == 0, r.err
    import json

    args = json.loads(r.out)["engine_args"]
    assert (args["max_num_batched_tokens"], args["max_num_seqs"], args["gpu_memory_utilization"]) == (2048, 256, 0.92)
    assert args["release"] == "0.30-0.33" and "arg_utils.py" in args["sources"]["max_num_seqs"]
