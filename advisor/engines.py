"""The serving engines the advisor speaks of, and the engine defaults it assumes, named once.

Light on purpose (no numpy/pydantic): the CLI's options import it at start-up.
"""

from __future__ import annotations

from typing import Literal

Engine = Literal["vllm", "sglang"]  # engines the cost model predicts and prints commands for
MeasuredEngine = Literal["vllm", "sglang", "trtllm"]  # engines a measurement or a calibration may name
ENGINES: tuple[str, ...] = ("vllm", "sglang")
MEASURED_ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm")
# Physics a measured engine is predicted with: TensorRT-LLM has no model of its own here (yet), so its rows
# are predicted with vLLM's collectives and scheduler and its fitted terms absorb the difference.
PHYSICS_ENGINE: dict[str, str] = {"vllm": "vllm", "sglang": "sglang", "trtllm": "vllm"}

KvDtype = Literal["auto", "bf16", "fp8"]
WeightDtype = Literal["bf16", "fp8", "int4", "nvfp4", "mxfp4"]

# vllm/config/cache.py `gpu_memory_utilization` at commit 9aaf83ef (2026-05-19; 0.9 before 2026-04-21)
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92
# A serving context a user typically asks for; the model's own maximum is often 128k-1M tokens, more KV
# than a box holds at any useful concurrency. The printed command passes it explicitly.
DEFAULT_MAX_MODEL_LEN = 32768
DEFAULT_CONCURRENCY = 64
DEFAULT_INPUT_LEN = 1024
DEFAULT_OUTPUT_LEN = 1024
