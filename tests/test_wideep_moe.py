"""The TensorRT-LLM wide-EP MoE check (`scripts/wideep_moe_check.py`): its sample, one row's prediction by hand, and
the docs block it writes."""

from __future__ import annotations

import math

import numpy as np

from advisor.cost import kernels
from advisor.hardware import load_profile
from scripts import wideep_moe_check as check
from scripts.readme_block import read_block

COLUMNS = ["version", "kernel_source", "moe_dtype", "moe_kernel", "num_tokens", "dp_num_tokens", "rank0_num_tokens",
           "hidden_size", "inter_size", "topk", "num_experts", "num_slots", "moe_tp_size", "moe_ep_size",
           "distribution", "simulation_mode", "latency_ms"]


def test_the_sample_keeps_every_column_and_the_same_share_of_every_gpu() -> None:
    # the full tables: 2,268 rows per GPU, 540 on the RTX PRO 6000 (tests/data/kernels/README.md); 60% of each
    sizes = {gpu: len(check.read(gpu)) for gpu in check.GPUS}
    assert sizes == {**dict.fromkeys(check.GPUS[:5], 1361), "rtx-pro-6000-server": 324}
    assert all(list(check.read(gpu)[0]) == COLUMNS for gpu in check.GPUS)


def test_one_row_is_the_step_models_formula_by_hand() -> None:
    # B200, NVFP4 experts 7168 x 2048 (3 matrices), top-8 of 256 over EP 16, 1,024 tokens across the DP ranks
    row = next(r for r in check.read("b200-sxm") if r["num_tokens"] == "1024" and r["moe_ep_size"] == "16"
               and r["hidden_size"] == "7168" and r["num_slots"] == "256")
    P, f = kernels.params()["moe"], kernels.params()["moe"]["by_fmt"]["nvfp4/trtllm"]
    bw, peak = 7.7e12, 9.0e15  # hwprofiles/b200-sxm.toml: HBM3e bandwidth, dense FP4
    gpu = load_profile("b200-sxm").gpu
    assert (gpu.mem_bw_bytes_per_s, gpu.dense_flops_per_s("fp4")) == (bw, peak)
    h, inter, b_w, T, k, E, ep = 7168, 2048, 0.5625, 1024, 8, 256, 16  # 0.5625: 4 bits + an FP8 scale per 16
    n_act = E / ep * (1 - (1 - k / E) ** T)
    mean = T * k / ep
    pairs = mean + math.sqrt(2 * mean * math.log(ep))
    tw = (n_act * 3 * h * inter * b_w / (f["e_bw"] * inter / (inter + P["I_h"])) + pairs * h * P["a_act_B"]) / bw \
        + (h + inter) * b_w * f["kappa_ns_per_B"] * 1e-9
    tc = (pairs + n_act * P["m_h"]) * 2 * 3 * h * inter / (peak * f["e_f"])
    by_hand_ms = (f["t0_us"] * 1e-6 + (tw ** P["p"] + tc ** P["p"]) ** (1 / P["p"])) * 1e3
    assert math.isclose(check.predict_ms([row], "b200-sxm")[0], by_hand_ms, rel_tol=1e-9)
    assert 0.08 < by_hand_ms < 0.11  # ~93 us; the table measured 130 us (power_law_1.01_eplb)


def test_the_table_pairs_of_even_routing_are_the_mean() -> None:
    # rank 0 holding uniform routing's tokens holds T k / EP pairs
    T, k, ep = 4096.0, 8.0, 32.0
    r0 = check.uniform_rank_tokens(np.array(T), np.array(k), np.array(ep))
    row = {"num_tokens": str(T), "topk": str(k), "moe_ep_size": str(ep), "rank0_num_tokens": str(float(r0))}
    assert math.isclose(check.table_pairs([row])[0], T * k / ep, rel_tol=1e-12)


def test_the_docs_block_is_what_the_check_writes() -> None:
    rows = check.scored()
    assert {r.gpu for r in rows} == set(check.GPUS)
    assert all(np.isfinite(r.err) and np.isfinite(r.err_routed) for r in rows)
    assert read_block("wideep-moe") == check.block(rows).rstrip("\n") + "\n", \
        "run: python -m scripts.wideep_moe_check --update"
