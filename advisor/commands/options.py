"""Options shared by the commands, typed once (`Annotated` aliases with help and bounds, so that typer
validates and documents them), and the objects they build."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.engines import (
    DEFAULT_CONCURRENCY,
    DEFAULT_ENGINE,
    DEFAULT_INPUT_LEN,
    DEFAULT_KV_CACHE_DTYPE,
    DEFAULT_MAX_MODEL_LEN,
    DEFAULT_OUTPUT_LEN,
    ENGINE_VERSION_HELP,
    Engine,
    KvDtype,
    WeightDtype,
)
from advisor.errors import AdvisorError
from advisor.hardware.ids import DEFAULT_HW

if TYPE_CHECKING:  # the modules behind these load numpy/pydantic: imported when a command runs
    from advisor.cost.plan import Plan
    from advisor.cost.workload import Settings
    from advisor.hardware import HardwareProfile
    from advisor.hardware.cluster import Cluster

Models = Annotated[list[str] | None, typer.Argument(
    help="ORG/NAME[@REVISION] (Hub, then the bundled catalog), a folder with config.json, or a config file. "
         "None: every bundled catalog model.", show_default=False)]
Model = Annotated[str, typer.Argument(
    help="ORG/NAME[@REVISION] (Hub, then the bundled catalog), a folder with config.json, or a config file.",
    show_default=False)]
Hw = Annotated[str, typer.Option("--hw", help="Hardware profile id (`advisor hw list`) or a profile .toml path.")]
HwMany = Annotated[list[str] | None, typer.Option(
    "--hw", help="Hardware profile id (`advisor hw list`) or a profile .toml path; repeat it to rank (model, box, "
                 "plan) across boxes.")]
Gpus = Annotated[int | None, typer.Option("--gpus", min=1, help="Use only N GPUs of the node (placed by topology).")]
Nodes = Annotated[int | None, typer.Option(
    "--nodes", show_default=False,
    help="Plan over N nodes of the profile joined by its scale-out fabric (an NVL72 tray profile: up to 18 trays "
         "share one NVLink rack, more are several racks) [default: one node].")]
FabricOpt = Annotated[str | None, typer.Option(
    "--fabric", show_default=False, help="Scale-out fabric between the nodes, an id the profile lists (`advisor hw "
                                         "show ID`) [default: the profile's first].")]
MoeA2a = Annotated[str, typer.Option(
    "--moe-a2a", help="MoE dispatch/combine under attention-DP + EP: default (the engine's own: all-gather / "
                      "reduce-scatter inside a node or rack, DeepEP across RDMA nodes), deepep (DeepEP's "
                      "all-to-all everywhere it runs: SGLang --moe-a2a-backend deepep, vLLM --all2all-backend "
                      "deepep_low_latency; needs NVLink), or auto (rank: both, the better per model).")]
TwoBatchOverlap = Annotated[bool, typer.Option(
    "--two-batch-overlap", help="SGLang's --enable-two-batch-overlap: each DP rank's batch as two micro-batches whose "
                                "DeepEP dispatch/combine runs under the other's compute; plans without a DeepEP "
                                "exchange are refused, as SGLang refuses it (add --moe-a2a deepep inside a node).")]
Tp = Annotated[int | None, typer.Option("--tp", min=1, help="Tensor-parallel size.")]
Pp = Annotated[int | None, typer.Option("--pp", min=1, help="Pipeline-parallel size.")]
Dp = Annotated[int | None, typer.Option("--dp", min=1, help="Data-parallel (attention) size.")]
Ep = Annotated[int | None, typer.Option("--ep", min=1, help="Expert-parallel size: vLLM's is TP x DP.")]
Concurrency = Annotated[int, typer.Option("--concurrency", min=1, help="Concurrent users (closed loop).")]
InputLen = Annotated[int, typer.Option("--input-len", min=1, help="Prompt tokens per request.")]
OutputLen = Annotated[int, typer.Option("--output-len", min=1, help="Generated tokens per request.")]
MaxModelLen = Annotated[int | None, typer.Option(
    "--max-model-len", min=2, show_default=False,
    help=f"Context per sequence the engine is started with, at least 2 (one prompt token and one generated) "
         f"[default: min(model maximum, {DEFAULT_MAX_MODEL_LEN}), raised to input + output length].")]
KvCacheDtype = Annotated[KvDtype, typer.Option(
    "--kv-cache-dtype", help="auto (the engine's pick: the checkpoint's; SGLang keeps a DSA model's cache in fp8 "
                             "on Blackwell), bf16 or fp8.")]
GpuMemoryUtilization = Annotated[float | None, typer.Option(
    "--gpu-memory-utilization", min=0.05, max=1.0, show_default=False,
    help="Share of each GPU's memory the engine may use [default: the engine release's: vLLM 0.9 up to 0.19, "
         "0.92 from 0.20]; with --engine sglang it is SGLang's --mem-fraction-static [default: SGLang's "
         "heuristic for the GPU and plan]; with --engine trtllm the share of the memory left after the start-up "
         "profile that goes to the KV cache (--kv_cache_free_gpu_memory_fraction) [default: 0.9].")]
EngineVersion = Annotated[str | None, typer.Option("--engine-version", show_default=False, help=ENGINE_VERSION_HELP)]
WeightDtypeOpt = Annotated[WeightDtype | None, typer.Option(
    "--weight-dtype", show_default=False, help="Re-quantize the linear layers (default: the checkpoint's own).")]
EngineOpt = Annotated[Engine, typer.Option(
    "--engine", help="Serving engine: vllm, sglang, or trtllm (TensorRT-LLM's PyTorch backend; calibrated on H100, "
                     "B200 and GB200 only).")]
Calibration = Annotated[str | None, typer.Option(
    "--calibration", show_default=False,
    help="Calibration file (default: the shipped one for this hardware and engine, if any).")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
Measurements = Annotated[list[str], typer.Argument(
    help="Measurement CSV (see `advisor check --help`) or vLLM bench JSON.", show_default=False)]
CondModel = Annotated[str | None, typer.Option("--model", help="Model of rows that do not name one.")]
CondHw = Annotated[str | None, typer.Option("--hw", help="Hardware of rows that do not name one (e.g. vLLM bench "
                                                     "JSON).")]
CondEngine = Annotated[Engine | None, typer.Option("--engine", help="Engine of rows that do not name one.")]
CondConcurrency = Annotated[int | None, typer.Option("--concurrency", min=1,
                                                     help="Concurrency of rows that do not state it.")]
OutputFile = Annotated[Path, typer.Option("-o", "--output", help="File to write (atomically).")]

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_ENGINE", "DEFAULT_HW", "DEFAULT_INPUT_LEN", "DEFAULT_KV_CACHE_DTYPE",
           "DEFAULT_OUTPUT_LEN"]  # the defaults the commands show, from their one definition


def hardware(hw: str, gpus: int | None) -> HardwareProfile:
    from advisor.hardware import load_profile

    profile = load_profile(hw)
    if gpus is not None and gpus > profile.topology.num_gpus:
        raise AdvisorError(f"--gpus: {gpus} is more than the {profile.topology.num_gpus} GPUs of {profile.id}")
    return profile


def cluster(profile: HardwareProfile, nodes: int | None, fabric: str | None, gpus: int | None = None
            ) -> Cluster | None:
    """The cluster --nodes/--fabric describe (None: one node, as without them); one line for bad input."""
    from advisor.hardware.cluster import load_cluster

    if nodes is None:
        if fabric is not None:
            load_cluster(profile, 1, fabric)  # an unknown fabric is refused even on one node
        return None
    if gpus is not None and nodes > 1:
        raise AdvisorError("--gpus/--nodes: --gpus limits one node; with several nodes every GPU of each is used")
    return load_cluster(profile, nodes, fabric)


Speculative = Annotated[str, typer.Option(
    "--speculative", help="MTP speculative decoding with the checkpoint's own heads: off, mtp, or auto (rank: "
                          "kept per model only where it wins).")]
SpecTokens = Annotated[int | None, typer.Option(
    "--spec-tokens", min=1, max=8, help="Tokens drafted per step (default: the checkpoint's MTP layers).")]
SpecAcceptance = Annotated[float | None, typer.Option(
    "--spec-acceptance", min=0.01, max=0.99, help="Per-position acceptance of drafted tokens (0-1); needed where no "
                                                  "published figure exists.")]


def speculation(speculative: str, tokens: int | None, acceptance: float | None) -> dict[str, object]:
    """Settings fields for --speculative mtp (or the mtp half of auto); one line naming the flag if malformed."""
    if speculative not in ("off", "mtp", "auto"):
        raise AdvisorError(f"--speculative: {speculative!r} is not off, mtp or auto")
    if speculative == "off":
        if tokens is not None or acceptance is not None:
            raise AdvisorError("--spec-tokens/--spec-acceptance: need --speculative mtp or auto")
        return {}
    return {"speculative": True, "speculative_tokens": tokens, "spec_acceptance": acceptance}


def settings(*, engine: str, engine_version: str | None, max_model_len: int | None, kv_cache_dtype: str,
             gpu_memory_utilization: float | None, weight_dtype: str | None, need_tokens: int = 0,
             spec: dict[str, object] | None = None, moe_a2a: str = "default", tbo: bool = False,
             rank: bool = False) -> Settings:
    """The user's engine flags (every default is filled later, per plan, by `cost/engine_args.py: resolve`).
    Without --max-model-len the default context is raised to `need_tokens` (input + output), else the printed
    serve command would refuse the request."""
    from advisor.cost.workload import Settings
    from advisor.engines import release

    try:
        release(engine, engine_version)
    except ValueError as err:
        raise AdvisorError(str(err)) from None
    if moe_a2a not in ("default", "deepep", "auto"):
        raise AdvisorError(f"--moe-a2a {moe_a2a}: expected default, deepep or auto (rank)")
    if moe_a2a == "auto" and not rank:
        raise AdvisorError("--moe-a2a auto: only rank compares both exchanges; give default or deepep")
    if tbo and engine != "sglang":
        raise AdvisorError(f"--two-batch-overlap: SGLang's --enable-two-batch-overlap; --engine is {engine}")
    if moe_a2a != "default" and engine == "trtllm":
        raise AdvisorError("--moe-a2a deepep: TensorRT-LLM picks its own MoE all-to-all (communication_factory.py); "
                           "the flag is vLLM's and SGLang's")
    if max_model_len is None and need_tokens > DEFAULT_MAX_MODEL_LEN:
        max_model_len = need_tokens
    return Settings(max_model_len=max_model_len, kv_cache_dtype=kv_cache_dtype,
                    gpu_memory_utilization=gpu_memory_utilization,
                    weight_dtype=weight_dtype, engine=engine, engine_version=engine_version,
                    moe_a2a_backend="default" if moe_a2a == "auto" else moe_a2a, two_batch_overlap=tbo,
                    **(spec or {}))


def plan_from_flags(tp: int | None, pp: int | None, dp: int | None, ep: int | None) -> Plan | None:
    """The plan the flags describe, or None when no plan flag was given."""
    from advisor.cost.plan import Plan

    if tp is None and pp is None and dp is None and ep is None:
        return None
    return Plan(tp=tp or 1, pp=pp or 1, dp=dp or 1, ep=ep or 1)


def measurement_defaults(**given: Any) -> dict[str, Any]:
    """Conditions a measurement file does not hold (a vLLM `bench serve` JSON has no hardware or plan); the
    file's own values win (`read_measurements(defaults=...)`)."""
    return {k: v for k, v in given.items() if v is not None}


# --- disaggregated serving (`decide/disagg_*.py`) -----------------------------------------------------------------
ModeOpt = Annotated[str, typer.Option(
    "--mode", help="agg: one pool serves prefill and decode (the plans as before); disagg: x prefill workers and y "
                   "decode workers joined by a KV-cache transfer; auto: both, the one serving more output tok/s "
                   "on the GPUs within --max-tpot-ms/--max-ttft-ms wins (each serves the most users within them: "
                   "--concurrency is not used).")]


def _pool(side: str, what: str, help_: str) -> Any:
    return typer.Option(f"--{side}-{what}", help=help_.format(side=side), show_default=False)


PrefillTp = Annotated[int | None, _pool("prefill", "tp", "Tensor-parallel size of each {side} worker.")]
PrefillPp = Annotated[int | None, _pool("prefill", "pp", "Pipeline-parallel size of each {side} worker.")]
PrefillDp = Annotated[int | None, _pool("prefill", "dp", "Attention data-parallel size of each {side} worker.")]
PrefillEp = Annotated[int | None, _pool("prefill", "ep", "Expert-parallel size of each {side} worker.")]
PrefillWorkers = Annotated[int | None, _pool("prefill", "workers", "Workers in the {side} pool [default: 1].")]
DecodeTp = Annotated[int | None, _pool("decode", "tp", "Tensor-parallel size of each {side} worker.")]
DecodePp = Annotated[int | None, _pool("decode", "pp", "Pipeline-parallel size of each {side} worker.")]
DecodeDp = Annotated[int | None, _pool("decode", "dp", "Attention data-parallel size of each {side} worker.")]
DecodeEp = Annotated[int | None, _pool("decode", "ep", "Expert-parallel size of each {side} worker.")]
DecodeWorkers = Annotated[int | None, _pool("decode", "workers", "Workers in the {side} pool [default: 1].")]
KvBackend = Annotated[str | None, typer.Option(
    "--kv-backend", show_default=False,
    help="KV transfer between the pools: vLLM nixl|mooncake|p2pnccl, SGLang mooncake|nixl, TensorRT-LLM "
         "default|ucx|nixl|mpi [default: the first].")]


def mode(value: str) -> str:
    """--mode checked (one line naming the flag)."""
    from advisor.decide.disagg_rank import MODES

    if value not in MODES:
        raise AdvisorError(f"--mode: {value!r} is not {', '.join(MODES)}")
    return value


def pools(prefill: tuple[int | None, ...], decode: tuple[int | None, ...], backend: str | None,
          aggregated: Plan | None) -> Any:
    """The disaggregated deployment the --prefill-*/--decode-* flags describe (tp, pp, dp, ep, workers of each
    side), or None when none is given; one line when only one side is, or beside an aggregated --tp/--pp/--dp/--ep
    plan. Worker counts are checked by `cost/disagg.py: make_disagg` (0: one line)."""
    from advisor.cost.plan import Plan
    from advisor.decide.disagg_one import Pools

    given = [any(v is not None for v in side) for side in (prefill, decode)]
    if not any(given):
        if backend is not None:
            raise AdvisorError("--kv-backend: needs a disaggregated plan (--prefill-*/--decode-*)")
        return None
    if not all(given):
        missing = "decode" if given[0] else "prefill"
        raise AdvisorError(f"--{missing}-*: a disaggregated plan needs both pools (give at least --{missing}-tp)")
    if aggregated is not None:
        raise AdvisorError("--tp/--pp/--dp/--ep describe one aggregated plan: with --prefill-*/--decode-* give each "
                           "pool's own")
    for side, vals in (("prefill", prefill), ("decode", decode)):
        for what, v in zip(("tp", "pp", "dp", "ep"), vals[:4], strict=True):
            if v is not None and v < 1:
                raise AdvisorError(f"--{side}-{what}: {v} is below 1")
    p, d = (Plan(tp=s[0] or 1, pp=s[1] or 1, dp=s[2] or 1, ep=s[3] or 1) for s in (prefill, decode))
    return Pools(prefill=p, x=1 if prefill[4] is None else prefill[4], decode=d,
                 y=1 if decode[4] is None else decode[4], backend=backend)


def output_folder(flag: str, path: str | Path) -> None:
    """An output file's folder must exist (no command creates one): one line naming the flag, before any work."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise AdvisorError(f"{flag} {target}: folder {folder} does not exist")
