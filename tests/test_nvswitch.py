"""NCCL over one NVSwitch NVLink domain beyond the node (hardware/nvswitch.py) and TensorRT-LLM's MNNVL allreduce on
an NVL72 rack (cost/cluster_comm.py): hand computations from the fitted parameters and the link rate, and the
held-out checks of scripts/nvswitch_fit.py against the measured tables."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.cost.cluster_comm import cluster_comm_fn, mnnvl_allreduce
from advisor.cost.step import comm_fn
from advisor.hardware import load_profile
from advisor.hardware.cluster import load_cluster
from advisor.hardware.nvswitch import NCCL_NVLS_US, generation, link_gbps, nvswitch_us
from advisor.hardware.scaleout import domain_timer
from scripts import nvswitch_fit as fit


@pytest.fixture(scope="module")
def gb200():  # type: ignore[no-untyped-def]
    return load_profile("gb200")


def test_generation_by_link_rate(gb200) -> None:  # type: ignore[no-untyped-def]
    gen = generation(gb200)
    assert gen is not None and gen["link_gbps"] == link_gbps(gb200) == 900.0
    assert generation(load_profile("b300-sxm")) is gen  # the same NVLink5 parameters
    assert generation(load_profile("h100-sxm")) is None  # NVLink4: no fitted generation, the old rule applies


def test_ring_by_hand(gb200) -> None:  # type: ignore[no-untyped-def]
    gen = generation(gb200)
    ll, simple = gen["ring"]["ll"], gen["ring"]["simple"]
    S = 229_376.0  # 16 tokens of hidden 7168 in BF16
    n = 16  # allgather: 15 ring steps, bus factor 15/16
    by_hand = min(ll["base_us"] + 15 * ll["step_us"] + 15 / 16 * S / (ll["link_share"] * 900e3),
                  simple["base_us"] + 15 * simple["step_us"] + 15 / 16 * S / (simple["link_share"] * 900e3),
                  NCCL_NVLS_US + 15 / 16 * S / (simple["link_share"] * 900e3))
    assert float(nvswitch_us("allgather", S, n, gen, 900.0)) == pytest.approx(by_hand, rel=1e-12)
    # 72 ranks: the LL ring's 142 steps cost more than NVLS's constant latency, which bounds the floor
    assert float(nvswitch_us("allreduce", 8.0, 72, gen, 900.0)) == pytest.approx(NCCL_NVLS_US, abs=0.01)


def test_domain_beyond_the_tray_is_the_nvswitch_model(gb200) -> None:  # type: ignore[no-untyped-def]
    S = np.array([1e3, 1e6, 1e8])
    gen = generation(gb200)
    assert np.allclose(domain_timer(gb200, "allreduce", 8)(S), nvswitch_us("allreduce", S, 8, gen, 900.0))
    # inside the tray the node's measured terms are unchanged
    node = comm_fn(gb200, "vllm")
    assert np.allclose(cluster_comm_fn(load_cluster(gb200, 2), "vllm", node)("allreduce", S, 4), node("allreduce",
                                                                                                      S, 4))


def test_trtllm_mnnvl_allreduce_by_hand(gb200) -> None:  # type: ignore[no-untyped-def]
    cl = load_cluster(gb200, 2)
    lat = next(c.small_latency_us for c in gb200.collectives if (c.op, c.backend, c.gpus) == ("allreduce",
                                                                                              "vllm_custom", 4))
    one, two = 8 * 7168 * 2 / 8, 16 * 7168 * 2.0  # one-shot below 64 KiB x 8 over the group, two-shot above
    f = cluster_comm_fn(cl, "trtllm", comm_fn(gb200, "trtllm"))
    assert float(f("allreduce", np.array(one), 8)) * 1e6 == pytest.approx(lat + 7 * one / 900e3, rel=1e-9)
    assert float(f("allreduce", np.array(two), 8)) * 1e6 == pytest.approx(2 * lat + 2 * 7 / 8 * two / 900e3,
                                                                          rel=1e-9)
    # a TP8 over two trays now costs what a B200 node's TP8 costs within 3 us a call (it was 21 us more)
    b200 = comm_fn(load_profile("b200-sxm"), "trtllm")
    assert abs(float(f("allreduce", np.array(two), 8)) - float(b200("allreduce", np.array(two), 8))) * 1e6 < 3.0
    assert mnnvl_allreduce(load_cluster(load_profile("h100-sxm"), 2), 16) is None  # no NVLink domain across nodes


def test_fit_reproduces_the_shipped_parameters() -> None:
    shipped = fit.params_doc()["generations"]["nvlink5"]
    again = fit.fit(fit.keys(fit.FIT_GPUS))
    for kind in ("ring", "alltoall"):
        for p in ("ll", "simple"):
            for name, v in shipped[kind][p].items():
                assert again[kind][p][name] == pytest.approx(v, rel=0.02, abs=0.02), (kind, p, name)


def test_held_out_trays_and_eight_gpu_nodes() -> None:
    """The trays' tables (never fitted on) within 10% median per (op, GPUs), floors within 15%; an 8-GPU node
    predicted from 2 and 4 GPUs within 12%."""
    rows = fit.checks(fit.params_doc()["generations"]["nvlink5"])
    trays = [r for r in rows if r["gpu"] in fit.HELD_OUT]
    assert len(trays) == 16 and max(r["median_abs_pct"] for r in trays) < 10.0
    assert max(abs(r["floor_pct"]) for r in trays) < 15.0
    eights = [r for r in rows if r["gpus"] == 8]
    assert len(eights) == 8 and max(r["median_abs_pct"] for r in eights) < 12.0
