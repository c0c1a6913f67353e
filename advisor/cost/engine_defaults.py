"""Engine defaults that depend on the GPU, the model or the plan, as the engines compute them at start-up (pure
functions; `cost/engine_args.py: resolve` is their one caller on the prediction path)."""

from __future__ import annotations

from advisor.arch.model import ModelArch
from advisor.cost.plan import Plan
from advisor.engines import Release
from advisor.hardware import HardwareProfile

MiB = 2**20


def cuda_total(hw: HardwareProfile) -> float:
    """The device total CUDA reports (the hardware profile's `cuda_total_bytes`, else nvidia-smi's)."""
    return float(hw.gpu.cuda_total_bytes or hw.gpu.memory_bytes)


def capture_sizes(max_num_seqs: int, batched_tokens: int, release: Release, sm: str | None) -> list[int]:
    """CUDA-graph capture sizes (`config/vllm.py:VllmConfig._set_cudagraph_sizes`, v0.12-v0.33): [1, 2, 4] +
    range(8, 256, 8) + range(256, max + 1, 16), max = min(2 max_num_seqs, 512; 1024 on data-center
    Blackwell from v0.30), none above max_num_batched_tokens."""
    top = 1024 if release.first >= 30 and sm in ("sm100", "sm103") else 512
    top = min(2 * max_num_seqs, top)
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, top + 1, 16)]
    return [s for s in sizes if s <= min(top, batched_tokens)]


# TensorRT-LLM `llmapi/llm_args.py: CudaGraphConfig._generate_cuda_graph_batch_sizes` (max_batch_size 0 -> 128,
# padding off): one decode graph per batch size 1-31, 32, 64, 128
TRTLLM_GRAPH_SIZES = [*range(1, 32), 32, 64, 128]


def sglang_defaults(plan: Plan, gpu_mib: float) -> tuple[int, int]:
    """(chunked_prefill_size, decode cuda_graph max_bs) by GPU memory (nvidia-smi MiB) and --tp-size
    (sglang v0.5.23 `srt/arg_groups/memory_hook.py:handle_gpu_memory_settings`)."""
    tp = plan.tp * plan.dp
    for limit, cpf, small, large in ((20, 2048, 8, 8), (35, 4096, 48, 160), (60, 4096, 32, 160),
                                     (90, 8192, 256, 512), (160, 8192, 256, 512)):
        if gpu_mib < limit * 1024:
            return cpf, small if tp < 4 else large
    return 16384, 512


def sglang_fraction(arch: ModelArch, plan: Plan, hw: HardwareProfile) -> float:
    """Default --mem-fraction-static = round((gpu_mem - reserved) / gpu_mem, 3), reserved (MiB) = 512 +
    1.5 max(chunked_prefill, 2048) + tp x pp / 8 x 1024 + decode max_bs x 2 (+ DP-attention terms) + prefill
    graphs (8 MiB per capture size, 1.5 GiB for MLA), at least 10 GiB above 60 GiB (`memory_hook.py:
    handle_gpu_memory_settings`, `reserve_for_graph_mb`, `cuda_graph_hook.py:
    generate_prefill_cuda_graph_batch_sizes`; breakable prefill graphs are off by default with PP)."""
    gpu = hw.gpu.memory_bytes / MiB  # `utils/common.py:get_device_memory_capacity`: nvidia-smi's total
    cpf, max_bs = sglang_defaults(plan, gpu)
    reserved = 512 + max(cpf, 2048) * 1.5 + plan.tp * plan.dp * plan.pp / 8 * 1024 + max_bs * 2
    if plan.dp > 1:
        reserved += max_bs * plan.dp * 3 + (max_bs * plan.dp * 1.5 if max_bs > 300 else 0)
    if plan.pp == 1:
        prefill_max = min(8192, cpf) if arch.attention == "mla" else cpf
        sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
                 *range(1280, 4097, 256), *range(4608, prefill_max + 1, 512)]
        reserved += 1536 if arch.attention == "mla" else 8 * sum(1 for s in sizes if s <= prefill_max)
    if gpu > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu - reserved) / gpu, 3)
