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

from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.arch.formats import compute_dtype, short_name
from advisor.cost.collectives import DEEPEP_BACKEND
from advisor.cost.engine_args import EngineArgs
from advisor.cost.plan import Plan
from advisor.decide.launch import Launch
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster
from advisor.hardware.placement import pick_gpus

# formats the engines can produce from a BF16 checkpoint at load, per engine (see the module docstring)
ONLINE: dict[str, dict[str, str]] = {"vllm": {"fp8": "fp8"}, "sglang": {"fp8": "fp8", "nvfp4": "nvfp4_online"},
                                     "trtllm": {}}
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
_NAMES = {"bf16": "BF16", "fp8": "FP8", "nvfp4": "NVFP4", "mxfp4": "MXFP4", "int4": "INT4"}
TRTLLM_OPTIONS_FILE = "extra_llm_api_options.yaml"


@dataclass(frozen=True)
class ServeCommand:
    """The deployment's commands, and notes on what it needs beyond them (empty when they are all it takes).
    `together`: the launches run at once from one shell on one node (replicas, then their router)."""

    launches: tuple[Launch, ...]
    notes: tuple[str, ...] = field(default=())
    together: bool = False

    @property
    def command(self) -> str:
        """Every command's pasteable line, one per line; launches that run together: each but the last started
        in the background (`&`), so that the whole text pastes as it is."""
        if self.together:
            return "\n".join([*(f"{launch.line} &" for launch in self.launches[:-1]), self.launches[-1].line])
        if len({launch.node for launch in self.launches}) == 1:
            return "\n".join(launch.line for launch in self.launches)
        # several nodes: a shell comment names the node each line runs on (the lines may be the same text)
        lines, node = [], None
        for launch in self.launches:
            if launch.node != node:
                node = launch.node
                lines.append(f"# on node {node}:")
            lines.append(launch.line)
        return "\n".join(lines)


@dataclass(frozen=True)
class Serving:
    """What the printed command serves: the model reference, the plan, and facts of the checkpoint."""

    model: str
    plan: Plan
    checkpoint_dtype: str  # the checkpoint's own headline weight format (short name)
    remote_code: bool  # config.json declares auto_map
    moe_only_groups: bool = False  # the only linear groups --weight-dtype converts are routed experts
    moe: bool = False
    spec_tokens: int = 0  # MTP tokens drafted per step the prediction assumed (0: no speculation)


def serve_command(s: Serving, hw: HardwareProfile, args: EngineArgs, cluster: Cluster | None = None,
                  replicas: int = 1, budget: int | None = None) -> ServeCommand:
    """The engine command for `s` under the resolved engine arguments, every value that shaped the prediction
    explicit, plus its notes; `replicas` copies of the plan on the node's `budget` GPUs (`decide/
    replica_commands.py`); on a multi-node `cluster`, one launch per node (`decide/multinode.py`)."""
    quant, notes = quantization(args.engine, args.weight_dtype, s, hw)
    target, why = serve_target(s.model)
    if why:
        notes.append(why)
    s = replace(s, model=target)
    gpus = tuple(range(s.plan.gpus))
    env: tuple[tuple[str, str], ...] = ()
    if s.plan.gpus < hw.topology.num_gpus:
        gpus = tuple(pick_gpus(hw, s.plan.gpus))
        env = (("CUDA_VISIBLE_DEVICES", ",".join(str(g) for g in gpus)),)
    build = {"sglang": _sglang, "trtllm": _trtllm}.get(args.engine, _vllm)
    argv, files = build(s, args, quant)
    if s.remote_code:
        # the config names Hub code (auto_map); vLLM forces it off for model types it registers itself
        # (`vllm/transformers_utils/config.py: _CONFIG_REGISTRY`), SGLang and TensorRT-LLM default it to False
        argv.append("--trust_remote_code" if args.engine == "trtllm" else "--trust-remote-code")
    if cluster is not None and cluster.multi_node:
        from advisor.decide.multinode import multinode_launches

        launches, more = multinode_launches(s.plan, args, cluster, argv, files, s.moe, env)
        return ServeCommand(launches, tuple(notes + more))
    if replicas > 1:
        from advisor.decide.replica_commands import replica_gpus, replica_launches

        groups = replica_gpus(hw, s.plan.gpus, replicas, budget or hw.topology.num_gpus)
        launches, more = replica_launches(args.engine, s.moe, s.plan.pp, s.plan.dp, argv, files, groups, hw)
        return ServeCommand(launches, tuple(notes + more), together=len(launches) > 1)
    return ServeCommand((Launch("server", 0, gpus, tuple(argv), env, files),), tuple(notes))


def serve_target(reference: str) -> tuple[str, str | None]:
    """What the engine serves for a model reference: a Hub id or a checkpoint folder as given; for a config file
    (which no engine serves) its folder, with a note unless that folder holds weights (`*.safetensors`)."""
    path = Path(reference)
    if not path.is_file():
        return reference, None
    folder = path.resolve().parent
    if (folder / "config.json").is_file() and any(folder.glob("*.safetensors")):
        return str(folder), None
    return str(folder), (f"{reference} is a config file: the command serves its folder, which holds no weights; "
                         "put the checkpoint's folder or Hub id in its place")


def _kv_share(args: EngineArgs) -> str:
    return f"{args.gpu_memory_utilization:g}"


def _vllm(s: Serving, args: EngineArgs, quant: str | None) -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """`vllm serve`: parallel sizes, context, memory share, KV dtype (`vllm/config/cache.py: CacheDType`), the
    scheduler limits the prediction assumed per DP rank (max_num_seqs, max_num_batched_tokens:
    `vllm/engine/arg_utils.py: EngineArgs._set_default_args`)."""
    p = s.plan
    argv = ["vllm", "serve", s.model, "--tensor-parallel-size", str(p.tp)]
    if p.pp > 1:
        argv += ["--pipeline-parallel-size", str(p.pp)]
    if p.dp > 1:
        argv += ["--data-parallel-size", str(p.dp)]
    if p.ep > 1:
        argv.append("--enable-expert-parallel")  # EP = TP x DP (`FusedMoEParallelConfig.make`)
        if args.moe_a2a_backend == "deepep" and p.dp > 1:  # the exchange as predicted (`Settings.moe_a2a_backend`)
            argv += ["--all2all-backend", str(DEEPEP_BACKEND["vllm"])]
    if quant:
        argv += ["--quantization", quant]
    argv += ["--max-model-len", str(args.max_model_len), "--gpu-memory-utilization", _kv_share(args),
             "--kv-cache-dtype", "fp8" if args.kv_cache_dtype == "fp8" else "bfloat16",
             "--max-num-seqs", str(args.max_num_seqs), "--max-num-batched-tokens", str(args.max_num_batched_tokens)]
    if args.enforce_eager:
        argv.append("--enforce-eager")
    if s.spec_tokens:  # the checkpoint's MTP heads as drafter (`vllm/config/speculative.py: SpeculativeConfig`)
        argv += ["--speculative-config", f'{{"method": "mtp", "num_speculative_tokens": {s.spec_tokens}}}']
    return argv, ()


def _sglang(s: Serving, args: EngineArgs, quant: str | None) -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """`python -m sglang.launch_server`: `--tp-size` counts every GPU of the engine and DP attention splits it
    (`python/sglang/srt/layers/dp_attention.py: compute_dp_attention_world_info`); `--max-running-requests` and
    `--chunked-prefill-size` are divided by the DP size (`mem_cache/kv_cache_configurator.py:
    resolve_max_num_reqs`, `server_args.py: _handle_data_parallelism`), so they are the per-rank values the
    prediction assumed times DP; `--mem-fraction-static` is the memory share; KV dtype names from
    `server_args.py` (`fp8_e4m3`, `bf16`)."""
    p = s.plan
    argv = ["python", "-m", "sglang.launch_server", "--model-path", s.model, "--tp-size", str(p.tp * p.dp)]
    if p.dp > 1:
        argv += ["--dp-size", str(p.dp), "--enable-dp-attention"]
    if p.ep > 1:
        argv += ["--ep-size", str(p.ep)]
        if args.moe_a2a_backend == "deepep" and p.dp > 1:  # the exchange as predicted (`Settings.moe_a2a_backend`)
            argv += ["--moe-a2a-backend", str(DEEPEP_BACKEND["sglang"]), "--deepep-mode", "auto"]
    if p.pp > 1:
        argv += ["--pp-size", str(p.pp)]
    if quant:
        argv += ["--quantization", quant]
    argv += ["--context-length", str(args.max_model_len), "--mem-fraction-static", _kv_share(args),
             "--kv-cache-dtype", "fp8_e4m3" if args.kv_cache_dtype == "fp8" else "bf16",
             "--max-running-requests", str(args.max_num_seqs * p.dp),
             "--chunked-prefill-size", str(args.max_num_batched_tokens * p.dp)]
    if args.enforce_eager:
        argv.append("--disable-cuda-graph")
    if args.two_batch_overlap:  # `server_args.py`: needs a MoE all-to-all backend (DeepEP), as predicted
        argv.append("--enable-two-batch-overlap")
    if s.spec_tokens:  # MTP drafts through SGLang's EAGLE path (`server_args.py: speculative_*`), one chain
        argv += ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", str(s.spec_tokens),
                 "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(s.spec_tokens + 1)]
    return argv, ()


def _trtllm(s: Serving, args: EngineArgs, quant: str | None) -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """`trtllm-serve` (PyTorch backend): `--tp_size` counts every GPU of the engine and attention DP spans them
    (`enable_attention_dp`), `--ep_size` sets the MoE's expert-parallel size (its TP is the rest); the KV share,
    `--max_batch_size` and `--max_num_tokens` the prediction assumed. Options without a flag go in the YAML file
    of `--extra_llm_api_options` (written by the same line); its `kv_cache_config` replaces the one the flags
    build (the merge is shallow), so it restates the memory fraction."""
    p = s.plan
    argv = ["trtllm-serve", s.model, "--backend", "pytorch", "--tp_size", str(p.tp * p.dp)]
    if p.pp > 1:
        argv += ["--pp_size", str(p.pp)]
    if p.ep > 1:
        argv += ["--ep_size", str(p.ep)]
    argv += ["--max_seq_len", str(args.max_model_len), "--max_batch_size", str(args.max_num_seqs),
             "--max_num_tokens", str(args.max_num_batched_tokens),
             "--kv_cache_free_gpu_memory_fraction", _kv_share(args)]
    yaml = ["enable_attention_dp: true"] if p.dp > 1 else []
    if args.kv_cache_dtype == "fp8":
        yaml += ["kv_cache_config:", "  dtype: fp8", f"  free_gpu_memory_fraction: {_kv_share(args)}"]
    if s.spec_tokens:  # the checkpoint's MTP heads (`llm_args.py: MTPDecodingConfig`)
        yaml += ["speculative_config:", "  decoding_type: MTP", f"  num_nextn_predict_layers: {s.spec_tokens}"]
    if not yaml:
        return argv, ()
    argv += ["--extra_llm_api_options", TRTLLM_OPTIONS_FILE]
    return argv, ((TRTLLM_OPTIONS_FILE, "\n".join(yaml) + "\n"),)


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
