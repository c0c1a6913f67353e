"""Weight formats under `--weight-dtype` and weight bytes per GPU under a plan (vLLM quant methods)."""

from __future__ import annotations

from advisor.arch.model import ModelArch, WeightGroup
from advisor.cost.plan import Plan

LINEAR = {"attn", "attn_replicated", "indexer", "linear_attn", "mamba", "dense_mlp", "routed_experts",
          "shared_experts"}
MOE_NVFP4 = ("routed_experts", "shared_experts", "dense_mlp")
# NVIDIA's dense NVFP4 checkpoints quantize attention too: nvidia/Qwen3-32B-NVFP4 "all Linear layers, lm_head
# kept at full precision" (its byte-identical mirror gdubicki/Qwen3-32B-NVFP4); the Hub counts 41B safetensors
# elements for nvidia/Llama-3.3-70B-Instruct-NVFP4, which is 68.5B FP4 weights packed two per U8 + one FP8 scale
# per 16 + 2.1B BF16 embed/lm_head = 40.6B (with BF16 attention it would be 45.9B)
DENSE_NVFP4 = ("attn", "attn_replicated", "dense_mlp")


def requantize(arch: ModelArch, weight_dtype: str | None, engine: str = "vllm") -> tuple[WeightGroup, ...]:
    """Groups stored as common checkpoints of that format store them (vLLM quant methods):
    bf16 all; fp8 every linear layer block-FP8 (DeepSeek/Qwen/MiniMax FP8); int4 routed experts INT4 g32
    (Kimi compressed-tensors) or, for dense models, every linear layer g128 (GPTQ/AWQ); nvfp4 as NVIDIA's
    ModelOpt checkpoints: a MoE model's MLPs and experts NVFP4 with attention BF16 (their `exclude_modules`
    list `self_attn`: nvidia/DeepSeek-V3-0324-NVFP4, MiniMax-M2.5-NVFP4), a dense model's every linear layer
    but lm_head (`DENSE_NVFP4`); mxfp4 experts only (gpt-oss).
    TensorRT-LLM's FP8 checkpoints are ModelOpt per-tensor FP8 (`tensorrt_llm/_torch/modules/linear.py:
    FP8QDQLinearMethod`), not block-FP8, unless the checkpoint itself is block-FP8."""
    if weight_dtype is None:
        return arch.weights
    out: dict[tuple[str, str, str], tuple[int, int]] = {}
    for w in arch.weights:
        fmt = _format(w.name, weight_dtype, arch.moe is not None) if w.name in LINEAR else w.fmt
        if engine == "trtllm" and fmt == "fp8-block" and w.fmt != "fp8-block":
            fmt = "fp8"
        key = (w.name, w.shard, fmt)
        params, layers = out.get(key, (0, 0))
        out[key] = (params + w.params, max(layers, w.layers))
    return tuple(WeightGroup(name=n, shard=s, fmt=f, params=p, layers=lay)
                 for (n, s, f), (p, lay) in out.items())


def _format(group: str, dtype: str, is_moe: bool) -> str:
    if dtype == "bf16":
        return "bf16"
    if dtype == "fp8":
        return "fp8-block"
    if dtype == "int4":
        if is_moe:
            return "int4-g32" if group == "routed_experts" else "bf16"
        return "int4-g128"
    if dtype == "nvfp4":
        return "nvfp4" if group in (MOE_NVFP4 if is_moe else DENSE_NVFP4) else "bf16"
    if dtype == "mxfp4":
        target = ("routed_experts",) if is_moe else ("dense_mlp",)
        return "mxfp4" if group in target else "bf16"
    raise ValueError(dtype)


def per_gpu_bytes(w: WeightGroup, plan: Plan) -> float:
    """Bytes of one group held by the most loaded GPU: TP-split, replicated, expert-placed (EP) or split
    (TP x DP without EP), vocab-parallel on the first/last PP stage."""
    if w.shard == "vocab":
        return w.bytes / plan.tp
    # vLLM splits layers as evenly as it can (`distributed/utils.py:get_pp_indices`); the fullest stage
    # holds ceil(L / pp) of them
    stage = w.bytes * _fullest_stage(w.layers, plan.pp)
    if w.shard == "tp":
        return stage / plan.tp
    if w.shard == "expert":
        return stage / (plan.tp * plan.dp)
    return stage


def _fullest_stage(layers: int, pp: int) -> float:
    if pp == 1 or layers == 0:
        return 1.0 / pp
    return -(-layers // pp) / layers


def weights_per_gpu(weights: tuple[WeightGroup, ...], plan: Plan) -> float:
    """Sum over groups; with PP the heavier end stage holds the larger of embed / lm_head."""
    layer = sum(per_gpu_bytes(w, plan) for w in weights if w.shard != "vocab")
    vocab = [per_gpu_bytes(w, plan) for w in weights if w.shard == "vocab"]
    return layer + (sum(vocab) if plan.pp == 1 else max(vocab, default=0.0))
