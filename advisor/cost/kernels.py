"""Per-kernel time models, one pure function per mechanism, with parameters fitted to measured kernel
latencies on seven GPUs (`kernel_params.json`, written by `scripts/fit_kernels.py`; its `source` and
`logo` fields say which tables and how well each model predicts a GPU it was not fitted on).

Every model is `t = t0 + (tw^p + tc^p)^(1/p)`: a fixed latency (launches, the kernel chain's small
kernels), a memory time at a fraction `e_bw` of the spec-sheet bandwidth and a compute time at a fraction
`e_f` of the spec-sheet peak of the dtype the kernel computes in, joined by a p-norm (p = 1: they add,
p -> inf: the larger wins). Parameters are per weight format (or KV dtype; for the fused MoE and decode and
prefill attention, per format and the kernel family its GPU generation runs, `MOE_FAMILY`, `ATTENTION_FAMILY`),
shared by every GPU, so a GPU never measured is predicted from its spec sheet.

- GEMM `[m, k] x [k, n]` (vLLM `layers/linear.py`): tw = (n k b_w + m (b_a k + 2 n)) / bw (weights, the input
  at b_a bytes, BF16 out); tc = 2 (m + m_h) n k / peak (m_h: the M tile a small batch pads to). A table's FP8/NVFP4
  row also pays its input's quantization kernels, q m k / bw before the GEMM (`TABLE_INPUT_QUANT`: q, b_a). Inside a
  serving step the engines fuse that kernel into the RMSNorm or activation producing the input: its t0 is the BF16
  one for every format (`gemm_step_t0_us`), plus the quantizations vLLM leaves unfused (`VLLM_UNFUSED_QUANT`).
- Fused MoE layer (vLLM `fused_moe/fused_moe.py`, `modular_kernel.py`; router output given): n_act local
  experts hold `pairs` (token, expert) pairs; tw = n_act W_e / (bw s) with s = I / (I + I_h) (a thin
  TP slice of an expert streams less efficiently); tc = (pairs + n_act m_h) 2 m_w h I / peak (each
  expert's rows padded to the block M); plus pairs h a / bw for permute / quantize / combine traffic.
- Decode attention over a paged KV cache (FlashInfer's TRT-LLM decode on sm100, FlashAttention 3 on sm90,
  FlashAttention 2 / FlashInfer decode elsewhere): tw = KV bytes / bw + L d b
  rho (one CTA streams one sequence's KV); tc = 4 b h L d / peak_bf16.
- Prefill (context) attention, causal, over a prompt's own tokens (FlashAttention 3 on sm90, FlashInfer's
  TRT-LLM prefill kernel on sm100, FlashAttention elsewhere): `tokens` queries of mean context `ctx`;
  tc = 2 tokens ctx h (d_k + d_v) / peak_bf16 (QK^T and PV, the causal half of the square); tw = (tokens h
  (d_k + d_v) 2 + tokens g (d_k + d_v) b_kv) / bw (Q in and O out in BF16, K and V read once). MLA prefill
  runs this form too, on the up-projected heads (vLLM `v1/attention/backends/mla/common.py`: the
  "compute friendly" path for prefill, d_k = nope + rope, d_v = v_head_dim, g = h).
- Gated DeltaNet layer (Qwen3-Next/3.5 linear attention; vLLM `gdn_linear_attn.py`: causal conv1d, then
  the FLA/FlashInfer gated delta rule), `heads` value heads of dk x dv state per GPU. Decode: the state is
  read and written once per sequence, tw = 2 batch heads dk dv 2 B / bw. Prefill (chunked, C = 64): the
  chunks of one sequence run in order, ts = seq s_ns; compute tc = batch seq heads (6 dk dv + 2 C (dk + dv))
  / peak_bf16 (state update, output and the intra-chunk products).
- MLA decode over the latent cache (absorbed weights; vLLM `attention/backends/mla/`: FlashMLA on sm90,
  FlashInfer/CUTLASS MLA on sm100, Triton MLA elsewhere, chosen in `platforms/cuda.py:
  get_attn_backend_cls`): tw = b L (r + rope) b_kv / bw (each latent read once for all heads);
  tc = 2 b h L (2 r + rope) / peak_bf16 (QK^T over latent + rope, PV over the latent). Fitted to the
  context slope of the MLA module tables (the projections do not grow with context).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

PARAMS = Path(__file__).with_name("kernel_params.json")

# Our storage formats -> the kernel tables' format of the kernel that runs them (per table). Block-FP8 dense
# GEMMs use the per-tensor FP8 parameters: the tables' block-FP8 GEMM rows carry a ~180 us fixed cost on
# every GPU (10x a whole DeepSeek decode layer), which is the collector's, not the serving path's.
MOE_FORMAT = {"bf16": "bfloat16", "fp8": "fp8", "fp8-block": "fp8_block", "nvfp4": "nvfp4",
              "mxfp4": "w4a16_mxfp4"}
GEMM_FORMAT = {"bf16": "bfloat16", "fp8": "fp8", "fp8-block": "fp8", "nvfp4": "nvfp4"}


@cache
def params() -> dict[str, Any]:
    """The shipped kernel parameters (see the module docstring)."""
    data: dict[str, Any] = json.loads(PARAMS.read_text(encoding="utf-8"))
    return data


def moe_format(fmt: str, native_fp4: bool) -> str:
    """Kernel-table format of an expert weight format: INT4 groups run W4A16 (Marlin); NVFP4 on a GPU without
    FP4 tensor cores runs weight-only like MXFP4 (vLLM `fused_moe/oracle`: Marlin W4A16 fallback)."""
    if fmt.startswith("int4"):
        return "int4_wo"
    if fmt == "nvfp4" and not native_fp4:
        return "w4a16_mxfp4"
    return MOE_FORMAT.get(fmt, "bfloat16")


def gemm_format(fmt: str, native_fp4: bool) -> str:
    """Kernel-table format of a dense weight format; weight-only 4-bit dense GEMMs take the BF16 parameters
    (their bytes are still the 4-bit ones)."""
    if fmt == "nvfp4" and not native_fp4:
        return "bfloat16"
    return GEMM_FORMAT.get(fmt, "bfloat16")


def pnorm(a: Any, b: Any, p: Any) -> Any:
    """(a^p + b^p)^(1/p) of two non-negative times, as hi (1 + (lo / hi)^p)^(1/p) with hi, lo the larger and the
    smaller: the same value with one power fewer (libm `pow` is most of a sweep's kernel arithmetic)."""
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    return hi * (1 + (lo / np.where(hi > 0, hi, 1.0)) ** p) ** (1 / p)


def gemm_step_t0_us() -> float:
    """Fixed latency of one dense GEMM inside a serving step, whatever its weight format: the BF16 table's t0. The
    FP8/NVFP4 tables time a quantized `RowParallelLinear.forward`, its input's quantization kernel included
    (aiconfigurator `collector/vllm/collect_gemm.py: run_gemm`), which the engines fuse into the RMSNorm or SiLU-and-mul
    producing that input (vLLM `fuse_norm_quant` / `fuse_act_quant`, on by default from -O1, docs/design/fusions.md;
    TensorRT-LLM `AllReduceFusionOp.RESIDUAL_RMS_NORM_QUANT_FP8/_NVFP4`, `tensorrt_llm/functional.py`); the ones vLLM
    leaves unfused are added per step (`VLLM_UNFUSED_QUANT`, `cost/step.py: _gemms`). Fitted on the
    serving rows, a scale on the quantized t0 went to ~0.55 (3.7 of 6.8 us, the BF16 3.2 us plus little) where the dense
    FP8 Llama-3.1-70B rows inform it and to ~1 where BF16 Qwen3-32B rows do; with this t0 it fits 0.88-1.06
    on every engine and GPU, with or without either model, and is not fitted."""
    return float(params()["gemm"]["by_fmt"]["bfloat16"]["t0_us"])


# Input quantizations a vLLM serving step still runs as kernels of their own, per attention layer and per dense MLP
# layer, by the weight format of those layers' linears (`features.py: _dense`): vLLM's fusion passes write the
# quantized input from the RMSNorm for FP8 per-tensor and per-token scales only (`compilation/fusion.py: FUSED_OPS`,
# no NVFP4 entry), from SiLU-and-mul for FP8 and NVFP4 (`activation_quant_fusion.py`), and never from attention,
# whose output quantization (`fuse_attn_quant`) is off by default (docs/design/fusions.md). FP8 quantizes the O
# projection's input alone; NVFP4 also the QKV and gate-up inputs. Block-FP8 (per-token-group) fusion varies by
# release and is not counted; neither are SGLang's or TensorRT-LLM's (TensorRT-LLM fuses the quantization into its
# allreduce-RMSNorm and attention kernels).
VLLM_UNFUSED_QUANT = {"fp8": (1, 0), "nvfp4": (2, 1)}


def quant_t0_us(fmt: str, native_fp4: bool) -> float:
    """Fixed latency of one unfused input quantization kernel: what the tables' quantized linear of the format's
    GEMM kernel takes beyond the BF16 one (0 for a BF16 or weight-only kernel)."""
    by = params()["gemm"]["by_fmt"]
    return max(float(by[gemm_format(fmt, native_fp4)]["t0_us"] - by["bfloat16"]["t0_us"]), 0.0)


@cache  # pure in its string arguments; callers only read the dict
def gemm_params(fmt: str, native_fp4: bool) -> dict[str, float]:
    """t0_us, e_bw, e_f of the GEMM kernel that runs weight format `fmt` (see `gemm_format`)."""
    return dict(params()["gemm"]["by_fmt"][gemm_format(fmt, native_fp4)])


# The fused-MoE kernel vLLM runs per GPU generation (`model_executor/layers/fused_moe/`: FlashInfer's TRT-LLM
# kernels on sm100/sm103; FlashInfer CUTLASS for FP8 on sm90 and for BF16/FP8/NVFP4 on sm120; OpenAI's Triton
# MXFP4 kernel on sm90; Marlin for INT4 everywhere (`marlin_moe_split`) and for weight-only FP4 off Blackwell
# datacenter GPUs; vLLM's Triton fused_moe otherwise), as each GPU's default kernel in the kernel tables shows
# (`scripts/fit_kernels.py: default_kernel`).
# FlashInfer compiles its CUTLASS fused MoE per generation (`flashinfer/jit/fused_moe.py:
# gen_cutlass_fused_moe_sm90_module` with Hopper's TMA grouped GEMMs, `gen_cutlass_fused_moe_sm120_module`): two
# kernels, fitted apart. On the same shapes the tables time sm90's per-tensor FP8 path 2-2.5x slower than sm120's
# (4096 x 2048 experts, top-8 of 256, one token: H100 428 us, RTX PRO 6000 172 us); one set of parameters for both
# put the RTX PRO 6000's layers 3.4x too slow and H100's 20-46% too fast.
CUTLASS_MOE_FAMILY = {"sm90": "cutlass", "sm120": "cutlass_sm120"}
MOE_FAMILY = {"sm90": {"fp8": CUTLASS_MOE_FAMILY["sm90"], "fp8_block": CUTLASS_MOE_FAMILY["sm90"],
                       "w4a16_mxfp4": "triton"},
              "sm120": {**dict.fromkeys(("bfloat16", "fp8", "nvfp4"), CUTLASS_MOE_FAMILY["sm120"]),
                        "w4a16_mxfp4": "marlin"}}
MOE_FAMILY_DEFAULT = {"sm100": "trtllm", "sm103": "trtllm"}
# The kernel tables' `int4_wo` rows are not Marlin: aiconfigurator's vLLM collector (vLLM 0.19/0.22 rows,
# `collector/vllm/collect_moe.py: run_moe_torch` before the 0.24.0 rewrite) calls `fused_experts` with
# `int4_w4a16_moe_quant_config` on unpacked uint8 weights, group 128, which vLLM runs with its WNA16 kernels
# (`fused_moe.py: dispatch_fused_moe_kernel`: `moe_wna16_gemm` CUDA up to 6 (token, expert) pairs per expert, the
# Triton `fused_moe_kernel_gptq_awq` above; the step shows in the rows), though it labels them
# `vllm_marlin_int4_moe`. They stay in the joint MoE fit they shipped with, grouped by generation as then; no
# storage format is priced from them. INT4 experts are priced by the Marlin model (`marlin_moe_split`).
WNA16_TABLE_FAMILY = {"sm90": "wna16_sm90", "sm100": "wna16_sm100", "sm103": "wna16_sm100"}


def moe_family(table_fmt: str, sm: str, weight_only_fp4: bool = False) -> str:
    """Kernel family running a kernel-table MoE format on a GPU generation (`MOE_FAMILY`); the tables' INT4 rows are
    vLLM's WNA16 kernels (`WNA16_TABLE_FAMILY`); NVFP4 experts on a GPU without FP4 tensor cores run Marlin (the
    weight-only MXFP4 group, timed on sm120 and sm89)."""
    if table_fmt == "int4_wo":
        return WNA16_TABLE_FAMILY.get(sm, "wna16")
    if weight_only_fp4 or (table_fmt == "w4a16_mxfp4" and sm not in MOE_FAMILY and sm not in MOE_FAMILY_DEFAULT):
        return "marlin"
    return MOE_FAMILY.get(sm, {}).get(table_fmt, MOE_FAMILY_DEFAULT.get(sm, "triton"))


def group_params(by: dict[str, dict[str, float]], key: str) -> dict[str, float]:
    """The parameters of group `key` ("format/family"); a group the tables never timed takes the median of its
    format's groups (of every group when none has its format)."""
    if key in by:
        return dict(by[key])
    same = [v for k, v in by.items() if k.split("/")[0] == key.split("/")[0]] or list(by.values())
    return {n: float(np.median([v[n] for v in same])) for n in same[0]}


def is_marlin(fmt: str) -> bool:
    """INT4 (W4A16) experts: vLLM serves them with Marlin (`compressed_tensors_moe.py:
    CompressedTensorsWNA16MarlinMoEMethod`, GPTQ/AWQ `*MarlinMoEMethod`), costed by `cost/marlin.py`."""
    return fmt.startswith("int4")


@cache  # pure in its string arguments; callers only read the dict
def moe_params(fmt: str, native_fp4: bool, sm: str) -> dict[str, float]:
    """t0_us, e_bw, e_f, kappa_ns_per_B of the fused-MoE kernel that runs expert format `fmt` on a GPU generation
    `sm` (`group_params`: a (format, family) the tables never timed takes the format's median). INT4 experts run
    Marlin: its fixed latency and efficiencies (`cost/marlin.py`, shared by every GPU; no per-size term)."""
    if is_marlin(fmt):
        m = params()["marlin_moe"]["by_kind"]["marlin"]
        return {"t0_us": m["t0_us"], "e_bw": m["e_bw"], "e_f": m["e_f"], "kappa_ns_per_B": 0.0}
    table = moe_format(fmt, native_fp4)
    family = moe_family(table, sm, weight_only_fp4=fmt == "nvfp4" and not native_fp4)
    return group_params(params()["moe"]["by_fmt"], f"{table}/{family}")


# The decode-attention kernel vLLM runs per GPU generation (`platforms/cuda.py: get_attn_backend_cls`), as each
# GPU's default kernel in the kernel tables shows (`scripts/fit_kernels.py: default_kernel`): FlashInfer's TRT-LLM
# decode kernels on sm100/sm103, FlashAttention 3 on sm90; elsewhere FlashAttention 2 for a BF16 cache and
# FlashInfer's own decode kernel for an FP8 one.
ATTENTION_FAMILY = {"sm100": "trtllm", "sm103": "trtllm", "sm90": "fa3"}


def attention_group(kv_dtype: str, sm: str) -> str:
    """Decode attention's parameter group: "<kv dtype>/<kernel family>" (`ATTENTION_FAMILY`)."""
    kv = "fp8" if kv_dtype == "fp8" else "bfloat16"
    return f"{kv}/{ATTENTION_FAMILY.get(sm, 'flashinfer' if kv == 'fp8' else 'fa2')}"


@cache  # pure in its string arguments; callers only read the dict
def attention_params(kv_dtype: str, sm: str) -> dict[str, float]:
    """t0_us, e_bw, e_f, rho_ns_per_B of decode attention over a `kv_dtype` cache on a GPU generation `sm`
    (`attention_group`; a family the tables never timed would take its KV dtype's median, `group_params`)."""
    return group_params(params()["attention"]["by_kv"], attention_group(kv_dtype, sm))


@cache  # pure in its string arguments; callers only read the dict
def prefill_params(kv_dtype: str, sm: str) -> dict[str, float]:
    """t0_us, e_bw, e_f of prefill attention with a `kv_dtype` cache on a GPU generation `sm`: the prefill kernel
    of the same family as decode's (`attention_group`: FlashInfer's TRT-LLM prefill on sm100/sm103, FlashAttention
    3 on sm90, FlashAttention 2 elsewhere; an FP8 cache there, which no prefill table times, takes the median of the
    FP8 families, `group_params`)."""
    return group_params(params()["prefill"]["by_kv"], attention_group(kv_dtype, sm))


@cache  # pure in its string argument; callers only read the dict
def mla_prefill_params(kv_dtype: str) -> dict[str, float]:
    """e_f of MLA prefill (up-projected heads), fitted to the growth with prompt length of the MLA tables."""
    return dict(params()["mla_prefill"]["by_kv"]["fp8" if kv_dtype == "fp8" else "bfloat16"])


NATIVE_MLA_SM = ("sm90", "sm100", "sm103")


@cache  # pure in its string arguments; callers only read the dict
def mla_params(kv_dtype: str, sm: str) -> dict[str, float]:
    """e_bw, e_f of MLA decode: the GPU's MLA kernel class (native FlashMLA/FlashInfer/CUTLASS or Triton)."""
    cls = ("native" if sm in NATIVE_MLA_SM else "triton") + "/" + ("fp8" if kv_dtype == "fp8" else "bfloat16")
    return dict(params()["mla"]["by_cls"][cls])


def mla_decode_us(f: Any, b_kv: Any, batch: Any, ctx: Any, heads: Any, latent: Any, rope: Any, bw: Any,
                  peak_bf16: Any, P: Any = None) -> Any:
    """Microseconds of MLA decode attention beyond its fixed latency: `batch` sequences of `ctx` latent tokens,
    `heads` query heads per GPU; `f` holds e_bw, e_f; `P` the shared p."""
    P = P or params()["mla"]
    tw = batch * ctx * (latent + rope) * b_kv / (bw * f["e_bw"]) * 1e6
    tc = 2 * batch * heads * ctx * (2 * latent + rope) / (peak_bf16 * f["e_f"]) * 1e6
    return pnorm(tw, tc, P["p"])


# What a kernel table's quantized linear does to its BF16 input before the GEMM, per input element: (bytes its
# quantization kernels move, bytes of the quantized input the GEMM then reads). The tables time an unfused
# `RowParallelLinear.forward` (aiconfigurator `collector/vllm/collect_gemm.py: run_gemm`): FP8 with a dynamic
# per-tensor scale runs vLLM `csrc/quantization/fp8/common.cu: dynamic_scaled_fp8_quant`, an absmax pass
# (`segmented_max_reduction_strided`, reads 2 B) then the quantize kernel (reads 2 B, writes 1 B); NVFP4 with a
# static global scale (compressed-tensors) runs `scaled_fp4_quant` (reads 2 B, writes 0.5 B and one FP8 scale per
# 16). A serving step mostly has no such pass: the engines write the quantized input from the RMSNorm or
# SiLU-and-mul that produces it (`gemm_step_t0_us`); of the quantizations vLLM leaves unfused (`VLLM_UNFUSED_QUANT`)
# `cost/step.py` prices the fixed latency, not the bytes (~2% of an 8192-token NVFP4 Llama-3.1-70B prefill on B200).
TABLE_INPUT_QUANT = {"fp8": (5.0, 1.0), "nvfp4": (2.5625, 0.5625)}
NO_INPUT_QUANT = (0.0, 2.0)  # a BF16 input, read as is


def gemm_us(f: Any, m: Any, n: Any, k: Any, w_bytes: Any, bw: Any, peak: Any, P: Any = None,
            quant: Any = NO_INPUT_QUANT) -> Any:
    """Microseconds of one linear layer: `w_bytes` of weights (scales included), m tokens, n x k matrix;
    `f` holds t0_us, e_bw, e_f (scalars or arrays, per case); `P` the shared m_h and p (default: shipped);
    `quant` (`TABLE_INPUT_QUANT`): its input quantization kernels' bytes per input element, which run before the
    GEMM and add to it, and the bytes per input element the GEMM reads (BF16 out)."""
    P = P or params()["gemm"]
    q_bytes, a_bytes = quant
    tq = q_bytes * m * k / (bw * f["e_bw"]) * 1e6
    tw = (w_bytes + m * (a_bytes * k + 2 * n)) / (bw * f["e_bw"]) * 1e6
    tc = 2 * (m + P["m_h"]) * n * k / (peak * f["e_f"]) * 1e6
    return f["t0_us"] + tq + pnorm(tw, tc, P["p"])


def moe_us(f: Any, n_act: Any, pairs: Any, hidden: Any, inter: Any, mats: Any, b_w: Any, bw: Any, peak: Any,
           P: Any = None) -> Any:
    """Microseconds of one fused-MoE layer on one GPU: `n_act` experts it holds are touched by `pairs`
    (token, expert) pairs; each expert is `mats` matrices of hidden x inter (its TP slice), `b_w` bytes per
    weight (scales included); `f` holds t0_us, e_bw, e_f, kappa_ns_per_B; `P` the shared m_h, I_h, a_act_B, p."""
    P = P or params()["moe"]
    w_expert = mats * hidden * inter * b_w
    slim = inter / (inter + P["I_h"])
    tw = n_act * w_expert / (bw * f["e_bw"] * slim) * 1e6 + (hidden + inter) * b_w * f["kappa_ns_per_B"] * 1e-3
    tc = (pairs + n_act * P["m_h"]) * 2 * mats * hidden * inter / (peak * f["e_f"]) * 1e6
    return f["t0_us"] + pnorm(tw, tc, P["p"]) + pairs * hidden * P["a_act_B"] / bw * 1e6


def attention_prefill_us(f: Any, b_kv: Any, tokens: Any, ctx: Any, heads: Any, kv_heads: Any, dk: Any, dv: Any,
                         bw: Any, peak_bf16: Any, P: Any = None) -> Any:
    """Microseconds of one prefill-attention call: `tokens` query tokens attending to `ctx` tokens on average
    (a causal prompt of n tokens: ctx = n / 2); `f` holds t0_us, e_bw, e_f; `P` the shared p."""
    P = P or params()["prefill"]
    tw = (tokens * heads * (dk + dv) * 2 + tokens * kv_heads * (dk + dv) * b_kv) / (bw * f["e_bw"]) * 1e6
    tc = 2 * tokens * ctx * heads * (dk + dv) / (peak_bf16 * f["e_f"]) * 1e6
    return f["t0_us"] + pnorm(tw, tc, P["p"])


GDN_CHUNK = 64  # FLA `chunk_gated_delta_rule` chunk length


@cache  # callers only read the dict
def gdn_params() -> dict[str, dict[str, float]]:
    """Gated DeltaNet decode (t0_us, e_bw) and prefill (t0_us, e_f, seq_ns) parameters."""
    return {"decode": dict(params()["gdn_decode"]["by_kind"]["gdn"]),
            "prefill": {**params()["gdn_prefill"]["by_kind"]["gdn"], "p": params()["gdn_prefill"]["p"]}}


def dsa_params() -> dict[str, float]:
    """DSA indexer chain (t0_us, e_bw): fitted to the sparse-attention module's time beyond the MLA module's."""
    return dict(params()["dsa"]["by_kind"]["dsa"])


def dsa_indexer_us(f: Any, batch: Any, ctx: Any, index_bytes: Any, bw: Any) -> Any:
    """Microseconds the DSA indexer adds to a decode layer (vLLM `sparse_attn_indexer.py`: projections, cache
    write, `fp8_paged_mqa_logits` over the whole context, top-k): t0 + the indexer cache read at the fitted
    effective rate e_bw (~0.08 of DRAM bandwidth: the logits and the top-k over the context, not the read, set it)."""
    return f["t0_us"] + batch * ctx * index_bytes / (bw * f["e_bw"]) * 1e6


def gdn_decode_us(f: Any, batch: Any, heads: Any, dk: Any, dv: Any, bw: Any) -> Any:
    """Microseconds of one Gated DeltaNet decode layer on one GPU: t0 + the BF16 state read and written."""
    return f["t0_us"] + 2 * batch * heads * dk * dv * 2 / (bw * f["e_bw"]) * 1e6


def gdn_prefill_us(f: Any, batch: Any, seq: Any, heads: Any, dk: Any, dv: Any, peak_bf16: Any, p: Any) -> Any:
    """Microseconds of one Gated DeltaNet prefill layer: `batch` prompts of `seq` tokens (module docstring)."""
    ts = seq * f["seq_ns"] * 1e-3
    tc = batch * seq * heads * (6 * dk * dv + 2 * GDN_CHUNK * (dk + dv)) / (peak_bf16 * f["e_f"]) * 1e6
    return f["t0_us"] + pnorm(ts, tc, p)


def attention_decode_us(f: Any, b_kv: Any, batch: Any, ctx: Any, heads: Any, kv_heads: Any, head_dim: Any,
                        bw: Any, peak_bf16: Any, P: Any = None) -> Any:
    """Microseconds of one decode-attention call over `batch` sequences of `ctx` tokens (heads per GPU);
    `f` holds t0_us, e_bw, e_f, rho_ns_per_B; `b_kv` bytes per KV element; `P` the shared p."""
    P = P or params()["attention"]
    kv = batch * ctx * kv_heads * head_dim * 2 * b_kv
    tw = kv / (bw * f["e_bw"]) * 1e6 + ctx * head_dim * b_kv * f["rho_ns_per_B"] * 1e-3
    tc = 4 * batch * heads * ctx * head_dim / (peak_bf16 * f["e_f"]) * 1e6
    return f["t0_us"] + pnorm(tw, tc, P["p"])
