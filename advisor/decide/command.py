"""The command that runs a chosen plan: `vllm serve` (or SGLang's launch_server)."""

from __future__ import annotations

from advisor.cost.plan import Plan
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile
from advisor.hardware.placement import pick_gpus


def serve_command(model: str, plan: Plan, hw: HardwareProfile, settings: Settings, max_model_len: int,
                  kv_dtype: str, default_kv: str) -> str:
    """vLLM flags from `vllm/engine/arg_utils.py`; SGLang flags from `sglang/srt/server_args.py`."""
    env = ""
    if plan.gpus < hw.topology.num_gpus:
        env = "CUDA_VISIBLE_DEVICES=" + ",".join(str(g) for g in pick_gpus(hw, plan.gpus)) + " "
    util = settings.gpu_memory_utilization  # None: the release's default, which the command need not repeat
    if settings.engine == "sglang":
        parts = [f"{env}python -m sglang.launch_server --model-path {model}", f"--tp-size {plan.tp * plan.dp}"]
        if plan.dp > 1:
            parts += [f"--dp-size {plan.dp}", "--enable-dp-attention"]
        if plan.ep > 1:
            parts.append(f"--ep-size {plan.ep}")
        if plan.pp > 1:
            parts.append(f"--pp-size {plan.pp}")
        parts.append(f"--context-length {max_model_len}")
        if util is not None:
            parts.append(f"--mem-fraction-static {util:g}")
        if kv_dtype != default_kv:
            parts.append(f"--kv-cache-dtype {'fp8_e4m3' if kv_dtype == 'fp8' else 'bfloat16'}")
        return " ".join(parts)
    parts = [f"{env}vllm serve {model}", f"--tensor-parallel-size {plan.tp}"]
    if plan.pp > 1:
        parts.append(f"--pipeline-parallel-size {plan.pp}")
    if plan.dp > 1:
        parts.append(f"--data-parallel-size {plan.dp}")
    if plan.ep > 1:
        parts.append("--enable-expert-parallel")
    parts.append(f"--max-model-len {max_model_len}")
    if util is not None and util != settings.release().gpu_memory_utilization:
        parts.append(f"--gpu-memory-utilization {util:g}")
    if kv_dtype != default_kv:
        parts.append(f"--kv-cache-dtype {kv_dtype if kv_dtype == 'fp8' else 'auto'}")
    return " ".join(parts)
