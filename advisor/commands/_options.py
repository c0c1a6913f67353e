"""Options shared by fit/predict/rank, their validation (exit 2 naming the flag), and what they build."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from advisor.arch.formats import WEIGHT_DTYPES
from advisor.commands._common import require
from advisor.hardware.ids import DEFAULT_HW

if TYPE_CHECKING:  # the modules behind these load numpy/pydantic: imported when a command runs
    from advisor.cost.plan import Plan
    from advisor.cost.workload import Settings
    from advisor.hardware import HardwareProfile

HW = typer.Option(DEFAULT_HW, "--hw", help="Hardware profile id (`advisor hw list`) or path to a profile TOML.")
GPUS = typer.Option(None, "--gpus", help="Use only N GPUs of the node (placed by topology).")
MAX_MODEL_LEN = typer.Option(None, "--max-model-len", help="Context per sequence [default: min(model max, 32768)].")
KV_DTYPE = typer.Option("auto", "--kv-cache-dtype", help="auto (checkpoint's), bf16 or fp8.")
UTIL = typer.Option(0.92, "--gpu-memory-utilization", help="vLLM's memory fraction (default 0.92).")
WEIGHT_DTYPE = typer.Option(None, "--weight-dtype", help=f"Re-quantize linear layers: {', '.join(WEIGHT_DTYPES)}.")
ENGINE = typer.Option("vllm", "--engine", help="vllm or sglang.")
JSON = typer.Option(False, "--json", help="Print one JSON document.")
CALIBRATION = typer.Option(None, "--calibration", help="Calibration file (default: the shipped one for "
                           "this hardware and engine, if any).")


def hardware(hw: str, gpus: int | None) -> HardwareProfile:
    from advisor.hardware import load_profile

    profile = load_profile(hw)
    if gpus is not None:
        require(1 <= gpus <= profile.topology.num_gpus, "--gpus",
                f"{gpus} is not between 1 and the {profile.topology.num_gpus} GPUs of {profile.id}")
    return profile


def settings(max_model_len: int | None, kv_cache_dtype: str, util: float, weight_dtype: str | None,
             engine: str, need_tokens: int = 0) -> Settings:
    """Engine settings from flags. Without --max-model-len the default context (min(model max, 32768))
    is raised to `need_tokens` (input + output), else the printed `vllm serve --max-model-len` would
    refuse the request."""
    from advisor.cost.workload import DEFAULT_MAX_MODEL_LEN, Settings

    if max_model_len is None and need_tokens > DEFAULT_MAX_MODEL_LEN:
        max_model_len = need_tokens

    require(max_model_len is None or max_model_len >= 1, "--max-model-len", f"{max_model_len} must be >= 1")
    require(kv_cache_dtype in ("auto", "bf16", "fp8"), "--kv-cache-dtype",
            f"{kv_cache_dtype!r} is not auto, bf16 or fp8")
    require(0 < util <= 1, "--gpu-memory-utilization", f"{util} is outside (0, 1]")
    require(weight_dtype is None or weight_dtype in WEIGHT_DTYPES, "--weight-dtype",
            f"{weight_dtype!r} is not one of {', '.join(WEIGHT_DTYPES)}")
    require(engine in ("vllm", "sglang"), "--engine", f"{engine!r} is not vllm or sglang")
    return Settings(max_model_len=max_model_len, kv_cache_dtype=kv_cache_dtype,
                    gpu_memory_utilization=util, weight_dtype=weight_dtype, engine=engine)


def plan_from_flags(tp: int | None, pp: int | None, dp: int | None, ep: int | None) -> Plan | None:
    """The plan the flags describe, or None when no plan flag was given."""
    from advisor.cost.plan import Plan

    for flag, value in (("--tp", tp), ("--pp", pp), ("--dp", dp), ("--ep", ep)):
        require(value is None or value >= 1, flag, f"{value} must be >= 1")
    if tp is None and pp is None and dp is None and ep is None:
        return None
    return Plan(tp=tp or 1, pp=pp or 1, dp=dp or 1, ep=ep or 1)


def check_lengths(arch_max: int, model: str, input_len: int, output_len: int, concurrency: int,
                  max_model_len: int | None) -> None:
    require(concurrency >= 1, "--concurrency", f"{concurrency} must be >= 1")
    require(input_len >= 1, "--input-len", f"{input_len} must be >= 1")
    require(output_len >= 1, "--output-len", f"{output_len} must be >= 1")
    limit = max_model_len or arch_max
    require(input_len + output_len <= arch_max, "--input-len/--output-len",
            f"{input_len}+{output_len} tokens exceed {model}'s context of {arch_max}")
    require(input_len + output_len <= limit, "--max-model-len",
            f"{input_len}+{output_len} tokens exceed --max-model-len {limit}")



def measurement_defaults(model: str | None, hw: str | None, engine: str | None, tp: int | None, pp: int | None,
                         dp: int | None, ep: int | None, concurrency: int | None,
                         weight_dtype: str | None) -> dict[str, Any]:
    """Conditions a measurement file does not hold (a vLLM `bench serve` JSON has no hardware or plan);
    the file's own values win (`read_measurements(defaults=...)`)."""
    given = {"model": model, "hardware": hw, "engine": engine, "tp": tp, "pp": pp, "dp": dp, "ep": ep,
             "concurrency": concurrency, "weight_dtype": weight_dtype}
    return {k: v for k, v in given.items() if v is not None}


COND_MODEL = typer.Option(None, "--model", help="Model of rows that do not name one.")
COND_HW = typer.Option(None, "--hw", help="Hardware of rows that do not name one (e.g. vLLM bench JSON).")
COND_ENGINE = typer.Option(None, "--engine", help="Engine of rows that do not name one.")
COND_CONC = typer.Option(None, "--concurrency", help="Concurrency of rows that do not state it.")
