"""Weight storage formats and their bytes per parameter, scales included.

Source: vLLM's quant methods (`vllm/model_executor/layers/quantization/`):
- fp8-block: `quantization/utils/fp8_utils.py:create_fp8_scale_parameter` (fp8 + one fp32 per 128x128 tile)
- fp8: per-tensor FP8 (`quantization/fp8.py`, ModelOpt FP8), scale negligible
- int4-gN: compressed-tensors W4A16 symmetric (`compressed_tensors_wNa16.py`): 0.5 + 2/N (bf16 scale per group)
- nvfp4: ModelOpt (`quantization/modelopt.py`): 0.5 + 1/16 (fp8 scale per 16)
- mxfp4: `quantization/mxfp4.py`: 0.5 + 1/32 (e8m0 scale per 32)
- mxfp8: ModelOpt MXFP8 (`quantization/modelopt.py`): 1 + 1/32 (e8m0 scale per 32)
"""

from __future__ import annotations

from advisor.errors import AdvisorError

_FIXED = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8-block": 1.0 + 4.0 / (128 * 128),
    "nvfp4": 0.5 + 1.0 / 16,
    "mxfp4": 0.5 + 1.0 / 32,
    "mxfp8": 1.0 + 1.0 / 32,
}

# The format names a user may give to --weight-dtype, and the compute dtype each runs at.
WEIGHT_DTYPES = ("bf16", "fp8", "int4", "nvfp4", "mxfp4")


def bytes_per_param(fmt: str) -> float:
    """Bytes per parameter of a storage format, scales included (vLLM quant methods, above)."""
    if fmt in _FIXED:
        return _FIXED[fmt]
    if fmt.startswith("int4-g"):
        group = int(fmt.removeprefix("int4-g"))
        return 0.5 + 2.0 / group
    if fmt.startswith("int8-g"):
        group = int(fmt.removeprefix("int8-g"))
        return 1.0 + 2.0 / group
    raise AdvisorError(f"unknown weight format {fmt!r}")


def compute_dtype(fmt: str) -> str:
    """The tensor-core dtype a GEMM on this format runs at: W4A16/INT4 and MXFP4 run at bf16
    (activations stay 16-bit, vLLM `compressed_tensors_wNa16.py`, `mxfp4.py` Marlin/Triton paths);
    NVFP4 ModelOpt quantizes activations to fp4 (`modelopt.py`, input_activations num_bits 4)."""
    if fmt in ("fp8", "fp8-block", "mxfp8"):
        return "fp8"
    if fmt == "nvfp4":
        return "fp4"
    return "bf16"


def short_name(fmt: str) -> str:
    """User-facing dtype name of a format (fp8-block -> fp8, int4-g32 -> int4)."""
    if fmt.startswith("fp8") or fmt == "mxfp8":
        return "fp8"
    if fmt.startswith("int4"):
        return "int4"
    return fmt
