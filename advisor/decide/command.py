"""The command that runs a chosen plan (`vllm serve`, SGLang's `launch_server` or `trtllm-serve`), with every
engine flag that shaped the prediction spelled out, and what the command needs that a flag cannot give (a
checkpoint).

vLLM flags: `vllm/engine/arg_utils.py` (EngineArgs); SGLang flags: `python/sglang/srt/server_args.py`
(ServerArgs); TensorRT-LLM: `tensorrt_llm/commands/serve.py` and the `--extra_llm_api_options` YAML keys of
`llmapi/llm_args.py` (TorchLlmArgs). Online quantization:
- vLLM `--quantization fp8` on a BF16 checkpoint quantizes every linear layer and the MoE experts to FP8 at
  load (`vllm/model_executor/layers/quantization/fp8.py: Fp8Config.get_quant_method` with
  `is_checkpoint_fp8_serialized=False` -> Fp8OnlineLinearMethod / Fp8OnlineMoEMethod), with per-tensor scales:
  the same bytes and FP8 math as the block-FP8 `--weight-dtype fp8` predicts (`cost/weights.py: requantize`),
  whose 128-block shape rule is the stricter one, so a plan predicted to run runs. NVFP4, MXFP4 and INT4
  have no online path (`vllm/config/quantization.py` online shorthands are FP8/MXFP8/INT8 only): they need a
  pre-quantized checkpoint (ModelOpt, compressed-tensors, GPTQ/AWQ, gpt-oss MXFP4).
- SGLang `--quantization fp8` is online FP8 for linear and MoE layers
  (`python/sglang/srt/layers/quantization/fp8.py: Fp8LinearMethod.process_weights_after_loading`);
  `--quantization nvfp4_online` converts the MoE experts only (dense layers unchanged,
  `python/sglang/srt/layers/quantization/nvfp4_online.py`).
- TensorRT-LLM's PyTorch backend loads quantized checkpoints as ModelOpt exported them (its
  `docs/source/features/quantization.md`); no online path is assumed for it: other formats need such a checkpoint.
- No engine turns a quantized checkpoint back into BF16 or into another format.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.arch.formats import compute_dtype, short_name
from advisor.cost.plan import Plan
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile
from advisor.hardware.placement import pick_gpus

# formats the engines can produce from a BF16 checkpoint at load, per engine (see the module docstring)
ONLINE: dict[str, dict[str, str]] = {"vllm": {"fp8": "fp8"}, "sglang": {"fp8": "fp8", "nvfp4": "nvfp4_online"},
                                     "trtllm": {}}
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
_NAMES = {"bf16": "BF16", "fp8": "FP8", "nvfp4": "NVFP4", "mxfp4": "MXFP4", "int4": "INT4"}


@dataclass(frozen=True)
class ServeCommand:
    """The command line, and notes on what it needs beyond it (empty when the command is all it takes)."""

    command: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Serving:
    """What the prediction assumed about the engine: the values the printed command must pass."""

    model: str
    plan: Plan
    max_model_len: int
    kv_dtype: str  # "bf16" | "fp8": the KV cache the prediction sized
    checkpoint_dtype: str  # the checkpoint's own headline weight format (short name)
    remote_code: bool  # config.json declares auto_map
    memory_fraction: float  # vLLM --gpu-memory-utilization, SGLang --mem-fraction-static, TensorRT-LLM's KV fraction
    moe_only_groups: bool = False  # the only linear groups --weight-dtype converts are routed experts
    moe: bool = False
    spec_tokens: int = 0  # MTP tokens drafted per step the prediction assumed (0: no speculation)


def serve_command(s: Serving, hw: HardwareProfile, settings: Settings) -> ServeCommand:
    """The engine command for `s`, every flag that shaped the prediction explicit, plus its notes."""
    quant, notes = quantization(settings.engine, settings.weight_dtype, s, hw)
    env = ""
    if s.plan.gpus < hw.topology.num_gpus:
        env = "CUDA_VISIBLE_DEVICES=" + ",".join(str(g) for g in pick_gpus(hw, s.plan.gpus)) + " "
    build = {"sglang": _sglang, "trtllm": _trtllm}.get(settings.engine, _vllm)
    parts = build(s, settings, hw.gpu.memory_bytes, quant)
    if s.remote_code:
        # the config names Hub code (auto_map); vLLM forces it off for model types it registers itself
        # (`vllm/transformers_utils/config.py: _CONFIG_REGISTRY`), SGLang and TensorRT-LLM default it to False
        parts.append("--trust_remote_code" if settings.engine == "trtllm" else "--trust-remote-code")
    return ServeCommand(env + " ".join(parts), tuple(notes))


def _vllm(s: Serving, settings: Settings, gpu_bytes: int, quant: str | None) -> list[str]:
    """`vllm serve`: parallel sizes, context, memory share, KV dtype (`vllm/config/cache.py: CacheDType`), the
    scheduler limits the prediction assumed per DP rank (max_num_seqs, max_num_batched_tokens:
    `vllm/engine/arg_utils.py: _get_default_max_num_seqs_and_batched_tokens`)."""
    p = s.plan
    parts = [f"vllm serve {s.model}", f"--tensor-parallel-size {p.tp}"]
    if p.pp > 1:
        parts.append(f"--pipeline-parallel-size {p.pp}")
    if p.dp > 1:
        parts.append(f"--data-parallel-size {p.dp}")
    if p.ep > 1:
        parts.append("--enable-expert-parallel")  # EP = TP x DP (`FusedMoEParallelConfig.make`)
    if quant:
        parts.append(f"--quantization {quant}")
    parts += [f"--max-model-len {s.max_model_len}", f"--gpu-memory-utilization {s.memory_fraction:g}",
              f"--kv-cache-dtype {'fp8' if s.kv_dtype == 'fp8' else 'bfloat16'}",
              f"--max-num-seqs {settings.num_seqs(gpu_bytes)}",
              f"--max-num-batched-tokens {settings.batched_tokens(gpu_bytes)}"]
    if s.spec_tokens:  # the checkpoint's MTP heads as drafter (`vllm/config/speculative.py: SpeculativeConfig`)
        parts.append(f"--speculative-config '{{\"method\": \"mtp\", \"num_speculative_tokens\": {s.spec_tokens}}}'")
    return parts


def _sglang(s: Serving, settings: Settings, gpu_bytes: int, quant: str | None) -> list[str]:
    """`python -m sglang.launch_server`: `--tp-size` counts every GPU of the engine and DP attention splits it
    (`python/sglang/srt/layers/dp_attention.py: compute_dp_attention_world_info`); `--max-running-requests` and
    `--chunked-prefill-size` are divided by the DP size (`mem_cache/kv_cache_configurator.py:
    resolve_max_num_reqs`, `server_args.py: _handle_data_parallelism`), so they are the per-rank values the
    prediction assumed times DP; `--mem-fraction-static` is the memory share; KV dtype names from
    `server_args.py` (`fp8_e4m3`, `bf16`)."""
    p = s.plan
    parts = [f"python -m sglang.launch_server --model-path {s.model}", f"--tp-size {p.tp * p.dp}"]
    if p.dp > 1:
        parts += [f"--dp-size {p.dp}", "--enable-dp-attention"]
    if p.ep > 1:
        parts.append(f"--ep-size {p.ep}")
    if p.pp > 1:
        parts.append(f"--pp-size {p.pp}")
    if quant:
        parts.append(f"--quantization {quant}")
    parts += [f"--context-length {s.max_model_len}", f"--mem-fraction-static {s.memory_fraction:g}",
              f"--kv-cache-dtype {'fp8_e4m3' if s.kv_dtype == 'fp8' else 'bf16'}",
              f"--max-running-requests {settings.num_seqs(gpu_bytes) * p.dp}",
              f"--chunked-prefill-size {settings.batched_tokens(gpu_bytes) * p.dp}"]
    if s.spec_tokens:  # MTP drafts through SGLang's EAGLE path (`server_args.py: speculative_*`), one chain
        parts += ["--speculative-algorithm EAGLE", f"--speculative-num-steps {s.spec_tokens}",
                  "--speculative-eagle-topk 1", f"--speculative-num-draft-tokens {s.spec_tokens + 1}"]
    return parts


def _trtllm(s: Serving, settings: Settings, gpu_bytes: int, quant: str | None) -> list[str]:
    """`trtllm-serve` (PyTorch backend): `--tp_size` counts every GPU of the engine and attention DP spans them
    (`enable_attention_dp`), `--ep_size` sets the MoE's expert-parallel size (its TP is the rest); the KV share,
    `--max_batch_size` and `--max_num_tokens` the prediction assumed. Options without a flag go in the YAML of
    `--extra_llm_api_options`, given inline; its `kv_cache_config` replaces the one the flags build (the merge
    is shallow), so it restates the memory fraction."""
    p = s.plan
    parts = [f"trtllm-serve {s.model}", "--backend pytorch", f"--tp_size {p.tp * p.dp}"]
    if p.pp > 1:
        parts.append(f"--pp_size {p.pp}")
    if p.ep > 1:
        parts.append(f"--ep_size {p.ep}")
    parts += [f"--max_seq_len {s.max_model_len}", f"--max_batch_size {settings.num_seqs(gpu_bytes)}",
              f"--max_num_tokens {settings.batched_tokens(gpu_bytes)}",
              f"--kv_cache_free_gpu_memory_fraction {s.memory_fraction:g}"]
    yaml = ["enable_attention_dp: true"] if p.dp > 1 else []
    if s.kv_dtype == "fp8":
        yaml += ["kv_cache_config:", "  dtype: fp8", f"  free_gpu_memory_fraction: {s.memory_fraction:g}"]
    if s.spec_tokens:  # the checkpoint's MTP heads (`llm_args.py: MTPDecodingConfig`)
        yaml += ["speculative_config:", "  decoding_type: MTP", f"  num_nextn_predict_layers: {s.spec_tokens}"]
    if yaml:
        parts.append("--extra_llm_api_options <(printf '" + "\\n".join(yaml) + "\\n')")
    return parts


def quantization(engine: str, wanted: str | None, s: Serving, hw: HardwareProfile) -> tuple[str | None, list[str]]:
    """The `--quantization` value that makes the engine produce the predicted weight format, and notes: a
    checkpoint the command needs instead of `s.model`, and how this GPU runs the format."""
    if wanted is None:
        return None, []
    have, model = short_name(s.checkpoint_dtype), s.model
    native, formats = _runs(wanted, hw)
    online = ONLINE[engine].get(wanted)
    if online == "nvfp4_online" and not s.moe:
        online = None  # it converts MoE experts only: a dense model would stay as it is
    notes: list[str] = []
    if wanted != have and online == "nvfp4_online" and have == "bf16" and not s.moe_only_groups:
        notes.append("SGLang's nvfp4_online converts the routed experts only; the prediction also counts shared "
                     "experts and dense MLPs as NVFP4")
    elif wanted != have and online and have != "bf16":
        notes.append(f"needs the BF16 checkpoint of {model} (this one is {_NAMES.get(have, have)}): --quantization "
                     f"{online} quantizes BF16 weights at load, it cannot convert quantized ones")
    elif wanted != have and wanted == "bf16":
        notes.append(f"needs the BF16 checkpoint of {model} in its place: no engine turns "
                     f"{_NAMES.get(have, have)} weights back into BF16")
        return None, notes
    elif wanted != have and not online:
        engine_name = ENGINE_NAMES[engine]
        label = _NAMES[wanted]
        notes.append(f"needs a pre-quantized {label} checkpoint of {model} in its place: {engine_name} cannot "
                     f"produce {label} weights at load (this checkpoint is {_NAMES.get(have, have)}); {formats}")
        return None, notes
    if not native:
        notes.append(formats)
    return (online if wanted != have else None), notes


def _runs(wanted: str, hw: HardwareProfile) -> tuple[bool, str]:
    """Whether this GPU runs the format on its own tensor cores (`arch.formats.compute_dtype`: INT4 and MXFP4
    keep BF16 activations), and the sentence that says which formats it runs natively."""
    fmt = {"int4": "int4-g128"}.get(wanted, wanted)
    need = compute_dtype(fmt)
    native = hw.gpu.native_formats
    ok = need in native and (need != "bf16" or wanted == "bf16")
    text = f"{hw.gpu.name} runs {', '.join(native)} natively"
    if not ok:
        text += (f"; {_NAMES[wanted]} only through a weight-only path (weights dequantized in-kernel, BF16 math: "
                 "vLLM Marlin, `vllm/model_executor/layers/fused_moe/experts/marlin_moe.py`)")
    return ok, text
