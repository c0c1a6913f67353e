"""The per-kernel models (`advisor/cost/kernels.py`) against measured kernel latencies (tests/data/kernels,
aiconfigurator tables): hand-computed points, the shipped parameters on the slices, and how well each model
predicts a GPU it was not fitted on (leave-one-GPU-out, stored by scripts/fit_kernels.py)."""

from __future__ import annotations

import csv
from typing import Any

import numpy as np
import pytest
from conftest import REPO

from advisor.cost import kernels
from scripts import fit_kernels

SLICES = REPO / "tests" / "data" / "kernels"


def slice_columns(model: str) -> dict[str, np.ndarray]:
    with open(SLICES / f"{model}.csv", newline="") as fh:
        rows: list[dict[str, Any]] = list(csv.DictReader(fh))
    for r in rows:
        for k, v in r.items():
            try:
                r[k] = float(v)
            except ValueError:
                pass
    return fit_kernels.columns(rows)


def test_attention_decode_by_hand() -> None:
    # 32 sequences x 4096 tokens x 8 KV heads x 128 dims x (K+V) x 2 B = 268 MB at 0.8 x 3.35 TB/s: 100 us
    f = {"t0_us": 10.0, "e_bw": 0.8, "e_f": 1.0, "rho_ns_per_B": 0.0}
    kv = 32 * 4096 * 8 * 128 * 2 * 2
    got = kernels.attention_decode_us(f, 2.0, 32, 4096, 64, 8, 128, 3.35e12, 989e12, {"p": 50.0})
    assert got == pytest.approx(10 + kv / (0.8 * 3.35e12) * 1e6, rel=1e-3)


def test_prefill_attention_by_hand() -> None:
    # one 8192-token prompt, 64 query heads of 128 dims: 2 x 8192 x 4096 x 64 x 256 FLOPs = 1.1 PFLOP... / 1e3
    # = 1.13e12 FLOPs at 0.5 x 989 TFLOP/s = 2.29 ms; memory (Q, O, K, V: 8192 x (128 + 16) x 256 B) is tiny
    f = {"t0_us": 10.0, "e_bw": 1.0, "e_f": 0.5}
    flops = 2 * 8192 * 4096 * 64 * 256
    got = kernels.attention_prefill_us(f, 2.0, 8192, 4096, 64, 8, 128, 128, 3.35e12, 989e12, {"p": 50.0})
    assert got == pytest.approx(10 + flops / (0.5 * 989e12) * 1e6, rel=1e-3)


def test_mla_prefill_runs_the_up_projected_form() -> None:
    # the MLA tables' growth with prompt length needs the up-projected heads' FLOPs (d_k 192 + d_v 128): the
    # fitted efficiency is a plausible share of the BF16 peak, where the absorbed latent form (576 + 512, 3.4x
    # the FLOPs) would need more than the peak
    for kv in ("bf16", "fp8"):
        e_f = kernels.mla_prefill_params(kv)["e_f"]
        assert 0.5 < e_f < 1.0
        assert e_f * (576 + 512) / (192 + 128) > 1.0


def test_gdn_by_hand() -> None:
    # decode: 64 sequences x 64 heads x 128 x 128 BF16 state read and written = 268 MB at 0.5 x 8 TB/s = 67 us
    f = {"t0_us": 5.0, "e_bw": 0.5}
    assert kernels.gdn_decode_us(f, 64, 64, 128, 128, 8e12) == pytest.approx(5 + 268.435456e6 / 4e12 * 1e6)
    # prefill: one 8192-token prompt: 8192 chunked-in-order tokens at 40 ns = 328 us (B200 table: 331 us at
    # 64 heads, 329 us at 8: the chain of chunks, not the heads, sets it)
    g = {"t0_us": 0.0, "e_f": 1.0, "seq_ns": 40.0}
    assert kernels.gdn_prefill_us(g, 1, 8192, 8, 128, 128, 2.25e15, 50.0) == pytest.approx(327.7, rel=0.01)


def test_mla_decode_is_memory_bound_on_native_kernels() -> None:
    # FlashInfer MLA on B200: the per-context slope does not grow with heads (1 -> 128 heads, same ns/token)
    c = slice_columns("mla")
    sel = (c["gpu"] == "b200-sxm") & (c["cls"] == "native/bfloat16") & (c["b"] == 32)
    by_heads = dict(zip(c["h"][sel], c["lat_us"][sel], strict=True))
    assert by_heads[128] == pytest.approx(by_heads[1], rel=0.1)
    f = kernels.mla_params("bf16", "sm100")
    # latent 512 + rope 64 in BF16 per token and sequence, at the fitted fraction of 8 TB/s
    one = kernels.mla_decode_us(f, 2.0, 32, 1.0, 128, 512, 64, 8e12, 2.25e15) * 1e3
    assert one == pytest.approx(by_heads[128], rel=0.15)


def test_triton_mla_is_compute_bound_at_many_heads() -> None:
    # Triton MLA (RTX PRO 6000): 128 heads cost ~4x 16 heads per context token; native kernels do not
    c = slice_columns("mla")
    sel = (c["gpu"] == "rtx-pro-6000-server") & (c["cls"] == "triton/bfloat16") & (c["b"] == 64)
    by_heads = dict(zip(c["h"][sel], c["lat_us"][sel], strict=True))
    assert by_heads[128] > 3 * by_heads[16]
    f = kernels.mla_params("bf16", "sm120")
    pred = [kernels.mla_decode_us(f, 2.0, 64, 1.0, h, 512, 64, 1.792e12, 467.8e12) for h in (16, 128)]
    assert pred[1] > 3 * pred[0]


@pytest.mark.parametrize("model,in_sample_max", [("moe", 30.0), ("gemm", 30.0), ("attention", 30.0),
                                                 ("mla", 30.0), ("prefill", 30.0), ("mla_prefill", 30.0),
                                                 ("gdn_decode", 30.0), ("gdn_prefill", 30.0), ("dsa", 30.0)])
def test_shipped_parameters_on_the_slices(model: str, in_sample_max: float) -> None:
    # the shipped parameters reproduce their own table's slice: median |error| under the stated bound
    c = slice_columns(model)
    pred = fit_kernels.evaluate(model, kernels.params()[model], c)
    err = np.abs(pred / c["lat_us"] - 1) * 100
    assert np.median(err) < in_sample_max
    stored = kernels.params()[model]["in_sample"]["median_abs_pct"]
    assert np.median(err) == pytest.approx(stored, abs=3.0)  # the slice is the sample the fit saw


def test_attention_kernels_by_gpu_generation() -> None:
    # vLLM runs FlashInfer's TRT-LLM decode kernels on sm100/sm103 and FlashAttention 3 on sm90; one parameter set for
    # every GPU put B300's decode table 24% too slow and H100's 17% too fast (median): per family, each GPU's
    # median signed error stays within 10%
    assert kernels.attention_group("fp8", "sm103") == "fp8/trtllm"
    assert kernels.attention_group("auto", "sm90") == "bfloat16/fa3"
    assert kernels.attention_group("bf16", "sm120") == "bfloat16/fa2"
    assert kernels.attention_group("fp8", "sm89") == "fp8/flashinfer"
    assert kernels.attention_params("fp8", "sm100") != kernels.attention_params("fp8", "sm90")
    assert kernels.attention_group("bf16", "") == "bfloat16/fa2"  # a GPU of no known generation: "elsewhere"
    c = slice_columns("attention")
    err = fit_kernels.evaluate("attention", kernels.params()["attention"], c) / c["lat_us"] - 1
    for gpu in ("b200-sxm", "b300-sxm", "h100-sxm", "gb200"):
        assert abs(np.median(err[c["gpu"] == gpu])) < 0.10, gpu


def test_tables_int4_rows_stay_in_the_joint_fit() -> None:
    # the tables' int4_wo rows time vLLM's WNA16 kernels (not Marlin, `kernels.WNA16_TABLE_FAMILY`): they keep the
    # per-generation groups of the joint MoE fit they shipped with (every GPU's rows within 20% median |error|), and
    # no storage format is priced from them: INT4 experts take Marlin's parameters (tests/test_int4_moe.py)
    assert kernels.moe_family("int4_wo", "sm103") == "wna16_sm100"
    assert kernels.moe_family("int4_wo", "sm120") == kernels.moe_family("int4_wo", "sm89") == "wna16"
    c = slice_columns("moe")
    err = np.abs(fit_kernels.evaluate("moe", kernels.params()["moe"], c) / c["lat_us"] - 1)
    int4 = np.array([f.startswith("int4_wo/") for f in c["fmt"]])
    gpus = sorted(set(c["gpu"][int4]))
    assert {"b200-sxm", "h100-sxm", "rtx-pro-6000-server"} <= set(gpus)
    for gpu in gpus:
        assert np.median(err[int4 & (c["gpu"] == gpu)]) < 0.20, gpu
    by = kernels.params()["moe"]["by_fmt"]
    assert kernels.moe_params("int4-g32", False, "sm90")["e_f"] != by["int4_wo/wna16_sm90"]["e_f"]
    assert kernels.moe_params("int4-g128", False, "sm100")["t0_us"] != by["int4_wo/wna16_sm100"]["t0_us"]


def test_flashinfer_cutlass_moe_by_gpu_generation() -> None:
    # FlashInfer builds its CUTLASS fused MoE per generation (sm90's TMA grouped GEMMs, a separate sm120 module):
    # one parameter set for both put the RTX PRO 6000's per-tensor FP8 layers 3.4x too slow and H100's 20-46% too
    # fast; fitted apart, each GPU's FP8 CUTLASS rows stay within 20% median |error|, and H100's kernel reads its
    # experts at a smaller share of its bandwidth than the RTX PRO 6000's does (the tables time it 2-2.5x slower
    # on the same shapes)
    assert kernels.moe_family("fp8", "sm90") == "cutlass"
    assert kernels.moe_family("fp8", "sm120") == kernels.moe_family("nvfp4", "sm120") == "cutlass_sm120"
    c = slice_columns("moe")
    err = np.abs(fit_kernels.evaluate("moe", kernels.params()["moe"], c) / c["lat_us"] - 1)
    for gpu, group in (("h100-sxm", "fp8/cutlass"), ("rtx-pro-6000-server", "fp8/cutlass_sm120")):
        rows = (c["gpu"] == gpu) & (c["fmt"] == group)
        assert rows.sum() > 300 and np.median(err[rows]) < 0.20, gpu
    by = kernels.params()["moe"]["by_fmt"]
    assert by["fp8/cutlass"]["e_bw"] < 0.5 * by["fp8/cutlass_sm120"]["e_bw"]


def test_leave_one_gpu_out_is_recorded_for_every_gpu() -> None:
    # each mechanism predicts a GPU it was not fitted on within 40% median |error| (the kernel check)
    for model in ("moe", "gemm", "attention", "mla", "prefill", "mla_prefill", "gdn_decode", "gdn_prefill"):
        logo = kernels.params()[model]["logo"]
        assert {"h100-sxm", "b200-sxm", "rtx-pro-6000-server"} <= set(logo)
        # known misses, kept visible: Gated DeltaNet decode on the GPUs whose large L2 holds small batches'
        # state (L40S, RTX PRO 6000), its prefill on H100 (a slower chain of chunks than Blackwell's)
        misses = {("gdn_decode", "l40s"), ("gdn_decode", "rtx-pro-6000-server"), ("gdn_prefill", "h100-sxm")}
        assert all(v["median_abs_pct"] < 40 for g, v in logo.items() if (model, g) not in misses), (model, logo)
        assert all(v["median_abs_pct"] < 100 for v in logo.values()), (model, logo)


def test_dsa_indexer_by_hand_and_held_out() -> None:
    # 128 sequences x 2048 tokens x 132 B (FP8 + scale) at e_bw x 8 TB/s, beyond the chain's fixed t0
    f = kernels.dsa_params()
    got = kernels.dsa_indexer_us(f, 128, 2048, 132, 8e12)
    assert got == pytest.approx(f["t0_us"] + 128 * 2048 * 132 / (f["e_bw"] * 8e12) * 1e6)
    # the sparse-attention module costs tens of microseconds more than MLA's at one sequence (the chain's own
    # kernels); the tables time it on four GPUs, each predicted within 40% median |error| when left out
    assert 30 < f["t0_us"] < 200
    logo = kernels.params()["dsa"]["logo"]
    assert set(logo) == {"h100-sxm", "b200-sxm", "b300-sxm", "gb200"}
    assert all(v["median_abs_pct"] < 40 for v in logo.values()), logo


def test_refit_on_the_slice_recovers_the_shipped_parameters() -> None:
    # refitting the GEMM model on its slice lands near the shipped fit (same rows, same loss)
    c = slice_columns("gemm")
    refit = fit_kernels.fit("gemm", c)
    shipped = kernels.params()["gemm"]
    for fmt, p in shipped["by_fmt"].items():
        assert refit["by_fmt"][fmt]["e_bw"] == pytest.approx(p["e_bw"], rel=0.05), fmt


def test_readme_kernel_accuracy_block_is_current() -> None:
    # scripts/kernel_accuracy.py writes it from the shipped parameters; a refit must regenerate it
    from scripts import kernel_accuracy
    from scripts.readme_block import read_block

    block = read_block("kernel-accuracy")  # docs/accuracy.md
    assert block == kernel_accuracy.table()


def test_moe_kernel_family_per_gpu_generation_is_the_tables_default() -> None:
    # the runtime's (format, GPU generation) -> kernel family is the kernel each GPU's table times by default
    from advisor.hardware import load_profile

    with open(SLICES / "moe.csv", newline="") as fh:
        seen = {(r["gpu"], r["fmt"]) for r in csv.DictReader(fh)}
    assert len({f for _, f in seen}) >= 10
    for gpu, fmt_family in sorted(seen):
        fmt, family = fmt_family.split("/")
        assert kernels.moe_family(fmt, load_profile(gpu).gpu.sm or "") == family, (gpu, fmt_family)
    # NVFP4 experts on Hopper run Marlin's weight-only kernel; a GPU generation the tables lack gets Triton
    assert kernels.moe_params("nvfp4", False, "sm90") == kernels.params()["moe"]["by_fmt"]["w4a16_mxfp4/marlin"]
    assert kernels.moe_family("bfloat16", "sm75") == "triton"


def test_quantized_gemm_fixed_latency_is_its_input_quantization() -> None:
    # The FP8/NVFP4 GEMM tables time RowParallelLinear.forward, the input's quantization kernel included
    # (aiconfigurator collect_gemm.py); their fixed latency exceeds BF16's by about one small kernel: at least
    # the smallest latency any GEMM row measures, at most three of them.
    from advisor.catalog import lookup
    from advisor.cost.features import Features
    from advisor.cost.plan import Plan
    from advisor.cost.step import _gemms
    from advisor.cost.sweep import make_case
    from advisor.cost.workload import Settings
    from advisor.hardware import load_profile

    by = kernels.params()["gemm"]["by_fmt"]
    floor = float(np.min(slice_columns("gemm")["lat_us"]))
    assert 1.5 < floor < 3.0
    for fmt in ("fp8", "nvfp4"):
        assert floor <= by[fmt]["t0_us"] - by["bfloat16"]["t0_us"] <= 3 * floor, fmt

    def fixed(model: str, gpu: str, fmt: str | None, engine: str) -> tuple[float, Features]:
        hw, st = load_profile(gpu), Settings(weight_dtype=fmt, engine=engine)
        case = make_case(lookup(model).arch, Plan(tp=4), hw, st)
        F = Features.from_flat(np.stack([case.features()]))
        return float(_gemms(F, 1e12, np.ones(1))[2][0]), F

    # in a serving step that kernel is fused into the RMSNorm / activation before the GEMM, except where vLLM
    # leaves it: a per-tensor FP8 checkpoint's O-projection input (80 layers), one kernel at the table's extra latency
    assert kernels.gemm_format("fp8", False) == "fp8"
    got, F = fixed("nvidia/Llama-3.1-70B-Instruct-FP8", "h100-sxm", None, "vllm")
    assert float(F.gemm_e_bw[0]) == pytest.approx(by["fp8"]["e_bw"])
    quant_us = by["fp8"]["t0_us"] - by["bfloat16"]["t0_us"]
    assert float(F.quant_us[0]) == pytest.approx(80 * quant_us)
    assert got == pytest.approx(float(F.gemm_calls[0]) * by["bfloat16"]["t0_us"] + 80 * quant_us)
    assert kernels.gemm_step_t0_us() == by["bfloat16"]["t0_us"]
    # NVFP4 on B200: its QKV, O and gate-up inputs (RMSNorm + NVFP4 quantization is not among vLLM's fusions)
    F = fixed("meta-llama/Llama-3.1-70B", "b200-sxm", "nvfp4", "vllm")[1]
    assert float(F.quant_us[0]) == pytest.approx(3 * 80 * (by["nvfp4"]["t0_us"] - by["bfloat16"]["t0_us"]))
    # block-FP8 (per-token-group) fusion varies by release: not counted; SGLang / TensorRT-LLM fuse it (not counted);
    # H100 runs NVFP4 weight-only, with no input to quantize
    assert fixed("meta-llama/Llama-3.1-70B", "b200-sxm", "fp8", "vllm")[1].quant_us[0] == 0
    assert fixed("meta-llama/Llama-3.1-70B", "b200-sxm", "nvfp4", "sglang")[1].quant_us[0] == 0
    assert fixed("meta-llama/Llama-3.1-70B", "h100-sxm", "nvfp4", "vllm")[1].quant_us[0] == 0


def test_gemm_table_rows_pay_their_input_quantization_by_hand() -> None:
    # An FP8 table row (m 8192, k 7168, n 32, B200) moves its BF16 input through vLLM's absmax and quantize kernels
    # (2 + 2 + 1 B per element) before the GEMM reads it in FP8 (1 B): at e_bw 0.5 of 8 TB/s the quantization is
    # 5 x 58.7 MB / 4 TB/s = 73.4 us, and the GEMM's memory time (weights + 1 B in + 2 B out) 14.9 us.
    f = {"t0_us": 5.0, "e_bw": 0.5, "e_f": 0.5}
    P = {"m_h": 0.0, "p": 50.0}
    m, n, k = 8192, 32, 7168
    quant = kernels.TABLE_INPUT_QUANT["fp8"]
    got = kernels.gemm_us(f, m, n, k, n * k, 8e12, 4.5e15, P, quant)
    tq, tw = 5 * m * k / 4e12 * 1e6, (n * k + m * (k + 2 * n)) / 4e12 * 1e6
    assert got == pytest.approx(5.0 + tq + tw, rel=1e-3)
    assert tq == pytest.approx(73.4, rel=1e-3)
    # a BF16 row has no such pass and reads its input as is
    bf16 = kernels.gemm_us(f, m, n, k, 2 * n * k, 8e12, 4.5e15, P)
    assert bf16 == pytest.approx(5.0 + (2 * n * k + 2 * m * (n + k)) / 4e12 * 1e6, rel=1e-3)


def test_shared_experts_ride_a_second_stream_at_small_batches() -> None:
    # vLLM, SGLang and TensorRT-LLM run a MoE layer's shared experts on a second CUDA stream beside the routed
    # ones up to a batch (vLLM's threshold: 256 tokens): a decode step does not pay their two GEMMs, a prefill does
    from advisor.catalog import lookup
    from advisor.cost.features import Features
    from advisor.cost.plan import Plan
    from advisor.cost.step import SHARED_STREAM_TOKENS, _gemms
    from advisor.cost.sweep import make_case
    from advisor.cost.workload import Settings
    from advisor.hardware import load_profile

    hw, st = load_profile("b200-sxm"), Settings()
    arch = lookup("deepseek-ai/DeepSeek-V3").arch
    F = Features.from_flat(np.stack([make_case(arch, Plan(tp=8), hw, st).features()]))
    assert arch.moe is not None and float(F.shared_calls[0]) == 2 * arch.moe.moe_layers == 116
    # one shared expert of 3 x 7168 x 2048 block-FP8 weights per MoE layer, an eighth of it per GPU
    per_gpu = 3 * 7168 * 2048 * arch.moe.moe_layers / 8
    assert float(F.shared_w_bytes[0]) == pytest.approx(per_gpu, rel=0.01)
    t0 = kernels.gemm_step_t0_us()
    small = _gemms(F, 8e12, np.array([float(SHARED_STREAM_TOKENS)]))
    large = _gemms(F, 8e12, np.array([float(SHARED_STREAM_TOKENS + 1)]))
    assert float(large[2][0] - small[2][0]) == pytest.approx(116 * t0)
    # their weights, and the BF16 activations in and out of their calls, are read at the larger batch only
    h, calls, n = float(F.hidden[0]), float(F.gemm_calls[0]), SHARED_STREAM_TOKENS
    extra = float(F.shared_w_bytes[0]) + 4 * (n + 1) * h * 116 / 8 + 4 * h * (calls - 116) / 8
    assert float(large[0][0] - small[0][0]) == pytest.approx(extra / (8e12 * float(F.gemm_e_bw[0])), rel=1e-9)
