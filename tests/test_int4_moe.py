"""INT4 (W4A16) experts priced by Marlin's MoE model (`advisor/cost/marlin.py`): hand-computed points, vLLM's block
rule, the shipped parameters against the kernel tables' MarlinExperts rows (tests/data/kernels/marlin_moe.csv) with
each GPU held out, Marlin's published behaviour, and the serving step that uses it (Kimi-K2.5 INT4 vs NVFP4)."""

from __future__ import annotations

import numpy as np
import pytest
from test_kernels import slice_columns

from advisor.catalog import lookup
from advisor.cost import kernels, marlin
from advisor.cost.plan import Plan
from advisor.cost.sweep import evaluate, make_case
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.hardware import load_profile
from scripts import fit_kernels
from scripts.kernel_tables import spec

KIMI_TP8 = {"hidden": 7168, "inter": 2048 / 8, "mats": 3, "b_w": 0.5 + 2 / 32}  # Kimi-K2.5 experts, int4-g32


def test_block_m_is_vllms_rule() -> None:
    # fused_marlin_moe: the first of 8, 16, 32, 48 with M k / E_local / bm < 0.9, else 64
    got = marlin.block_m(np.array([0.1, 7.1, 7.3, 14.3, 14.5, 43.0, 43.5, 57.0, 500.0]))
    assert got.tolist() == [8, 8, 16, 16, 32, 48, 64, 64, 64]


def test_blocks_pad_each_expert() -> None:
    # 8 touched experts with 1 token each: one block each; 4 experts x 100 tokens at bm 64: 100/64 + 1/2 blocks each
    assert marlin.blocks(8.0, 8.0, 8.0) == pytest.approx(8.0)
    assert marlin.blocks(4.0, 400.0, 64.0) == pytest.approx(4 * (100 / 64 + 0.5))


def test_one_token_kimi_layer_by_hand() -> None:
    # Kimi-K2.5 TP8 on the RTX PRO 6000, one token: 8 experts x 3 x 7168 x 256 int4-g32 weights (24.8 MB) plus the
    # activations (8 pairs x (6 h + 12 I) B) at e_bw x 1.792 TB/s; dequantization and MMA made free (w_sm, e_f huge)
    f = {"t0_us": 10.0, "e_bw": 0.8, "w_per_sm_cycle": 1e12, "e_f": 1e12}
    k = KIMI_TP8
    dram = (8 * 3 * 7168 * 256 * k["b_w"] + 8 * (6 * 7168 + 12 * 256)) / (0.8 * 1.792e12) * 1e6
    got = marlin.moe_us(f, 8.0, 8.0, 8.0, 8.0, k["hidden"], k["inter"], k["mats"], k["b_w"], 1.792e12, 467.8e12,
                        1024.0, 1024.0, 4.0)
    assert dram == pytest.approx(17.5, abs=0.1)
    assert got == pytest.approx(10 + dram, rel=1e-6)


def test_int4_experts_priced_by_marlin() -> None:
    m = kernels.params()["marlin_moe"]["by_kind"]["marlin"]
    for sm in ("sm90", "sm100", "sm120"):
        got = kernels.moe_params("int4-g32", False, sm)
        assert (got["t0_us"], got["e_bw"], got["e_f"]) == (m["t0_us"], m["e_bw"], m["e_f"])
    # mma.sync is the spec-sheet instruction on sm89/sm120, not on sm90 (wgmma) or sm100 (tcgen05)
    assert marlin.gpu_rates("sm120") == (1024.0, 1024.0)
    assert marlin.gpu_rates("sm90") == (4096.0, m["mma_sync_flops_per_sm_cycle"])


def test_shipped_fit_on_marlin_rows() -> None:
    # one parameter set for every GPU: each GPU's MarlinExperts rows within 15% median |error| in sample, and the
    # physically named parameters where the hardware puts them
    c = slice_columns("marlin_moe")
    P = kernels.params()["marlin_moe"]
    err = np.abs(fit_kernels.evaluate("marlin_moe", P, c) / c["lat_us"] - 1)
    assert set(c["gpu"]) == {"rtx-pro-6000-server", "l40s", "h100-sxm", "b200-sxm", "b300-sxm", "gb200"}
    for gpu in set(c["gpu"]):
        assert np.median(err[c["gpu"] == gpu]) < 0.15, gpu
    f = P["by_kind"]["marlin"]
    assert 0.6 < f["e_bw"] <= 1.0  # DRAM share of the weight stream
    assert 0.3 < f["e_f"] <= 1.0  # share of the mma.sync rate
    assert 1024 < f["mma_sync_flops_per_sm_cycle"] < 4096  # below H100's wgmma rate per SM cycle
    assert 5 < f["w_per_sm_cycle"] < 60


def test_each_gpu_held_out() -> None:
    # refit without a GPU's rows, predict them: median |error| <= 15% for every GPU (sm90 has one GPU, so the
    # parameters are shared by every generation and none is fitted per generation)
    c = slice_columns("marlin_moe")
    logo = fit_kernels.leave_one_gpu_out("marlin_moe", c)
    assert {g: e["median_abs_pct"] for g, e in logo.items()} == {
        g: e["median_abs_pct"] for g, e in kernels.params()["marlin_moe"]["logo"].items()}
    for gpu, e in logo.items():
        assert e["median_abs_pct"] <= 15.0, gpu


def _layer_us(gpu: str, sm: str, tokens_per_expert: float, experts: float = 128.0) -> float:
    s = spec(gpu)
    fpc, mma = marlin.gpu_rates(sm)
    f = marlin.marlin_params()
    bm = marlin.block_m(tokens_per_expert)
    nblk = marlin.blocks(experts, experts * tokens_per_expert, bm)
    return float(marlin.moe_us(f, experts, experts * tokens_per_expert, nblk, bm, 4096, 1536, 3, 0.5625, s["bw"],
                               s["bf16"], fpc, mma, f["p"]))


def test_near_weight_read_bound_at_small_batch() -> None:
    # Marlin README (IST-DASLab/marlin): close to ideal 4-bit speed-up up to batch 16-32 on Ampere/Ada-class GPUs;
    # "not yet optimized for Hopper". Here: 128 experts of 4096 x 1536 on the L40S and RTX PRO 6000 cost within 10%
    # of one token each up to 16 tokens each, and compute shows by 128; on B200 one token per expert already runs
    # above the DRAM line (the SMs' dequantization binds)
    for gpu, sm in (("l40s", "sm89"), ("rtx-pro-6000-server", "sm120")):
        one = _layer_us(gpu, sm, 1)
        assert _layer_us(gpu, sm, 16) < 1.10 * one, gpu
        assert _layer_us(gpu, sm, 128) > 1.8 * one, gpu
    s, f = spec("b200-sxm"), marlin.marlin_params()
    dram = f["t0_us"] + 128 * 3 * 4096 * 1536 * 0.5625 / (f["e_bw"] * s["bw"]) * 1e6
    assert _layer_us("b200-sxm", "sm100", 1) > 1.5 * dram


def test_tables_int4_rows_are_a_slower_kernel() -> None:
    # the tables' int4_wo rows time vLLM's WNA16 kernels (`kernels.WNA16_TABLE_FAMILY`): Marlin's model puts them
    # at 0.35-0.5 of their measured time on every GPU (group 128: 0.516 B per weight)
    c = slice_columns("moe")
    m = np.array([f.startswith("int4_wo/") for f in c["fmt"]])
    sm = {"rtx-pro-6000-server": "sm120", "h100-sxm": "sm90", "b200-sxm": "sm100", "b300-sxm": "sm103",
          "l40s": "sm89", "gb200": "sm100"}
    fpc, mma = (np.array(v) for v in zip(*(marlin.gpu_rates(sm[g]) for g in c["gpu"][m]), strict=True))
    bm = marlin.block_m(c["T"][m] * c["k"][m] * c["ep"][m] / c["E"][m])
    nblk = marlin.blocks(c["n_act"][m], c["pairs"][m], bm)
    f = marlin.marlin_params()
    pred = marlin.moe_us(f, c["n_act"][m], c["pairs"][m], nblk, bm, c["h"][m], c["I"][m] / c["tp"][m], c["mats"][m],
                         0.5 + 2 / 128, c["bw"][m], c["peak_bf16"][m], fpc, mma, f["p"])
    ratio = pred / c["lat_us"][m]
    for gpu in sm:
        assert 0.3 < np.median(ratio[c["gpu"][m] == gpu]) < 0.55, gpu


def _tpot(model: str, hw_id: str, users: int) -> float:
    hw = load_profile(hw_id)
    entry = lookup(model)
    assert entry is not None
    case = make_case(entry.arch, Plan(tp=8), hw, Settings())
    pred = evaluate([case], Terms(), np.array([users]), np.array([1024]), np.array([1024])).at(0, users)
    assert pred.tpot_ms is not None
    return pred.tpot_ms


def test_kimi_int4_grows_with_users_like_nvfp4() -> None:
    # 8x RTX PRO 6000, TP8: from 1 to 64 users INT4 Kimi-K2.5's TPOT grew 2.0x as fast as the NVFP4 checkpoint's when
    # its experts were priced by the tables' WNA16 rows (padded to 59 rows each and compute-bound); with Marlin's
    # blocks both stream their experts from DRAM and grow within 15% of each other
    growth = {m: _tpot(m, "rtx-pro-6000-server", 64) / _tpot(m, "rtx-pro-6000-server", 1)
              for m in ("moonshotai/Kimi-K2.5", "nvidia/Kimi-K2.5-NVFP4")}
    assert growth["moonshotai/Kimi-K2.5"] == pytest.approx(growth["nvidia/Kimi-K2.5-NVFP4"], rel=0.15)
