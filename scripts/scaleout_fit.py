"""Fit the wide-EP dispatch/combine model (`advisor/hardware/wide_ep.py`) and write `wide_ep_params.json`.

    python -m scripts.scaleout_fit [--out advisor/hardware/wide_ep_params.json]

NVLink side: DeepEP's single-node tables (`tests/data/kernels/<gpu>/deepep_{ll,normal}.csv.gz`: aiconfigurator's
collector, SGLang 0.5.12; README beside them), one set of physically named parameters shared by every GPU, fitted by
least squares on log(predicted / measured); each GPU is also left out and predicted from a fit on the others (the
held-out medians go into the file and docs/collectives-scaleout.md). NIC side: the NIC share of each mode fitted to
DeepEP's own multi-node dispatch figures (README, legacy V1 tables, H800 + ConnectX-7 400 Gb/s), the combine
figures left as the check. TensorRT-LLM's NVLinkOneSided all-to-all: its floors and NVLink share per direction fitted
to NVIDIA's published GB200 NVL72 figures (`BLOG18_ONE_SIDED`), each EP size also predicted from the other three.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from advisor.files import write_atomic
from advisor.hardware import load_profile
from advisor.hardware.scaleout import domain_floor_busbw
from advisor.hardware.wide_ep import (
    DEVICE_SMS,
    MIN_DEVICE_SMS,
    PARAMS,
    EPLinks,
    MoEShape,
    ll_us,
    normal_us,
    one_sided_us,
)

REPO = Path(__file__).resolve().parents[1]
TABLES = REPO / "tests" / "data" / "kernels"
GPUS = ("h100-sxm", "b200-sxm", "b300-sxm", "gb200", "gb300")
SOURCE = ("DeepEP single-node tables (aiconfigurator ai-dynamo/aiconfigurator@095f58a5, SGLang 0.5.12; "
          "tests/data/kernels/<gpu>/deepep_*.csv.gz) for floors, NVLink shares and copy rates; DeepEP README "
          "(deepseek-ai/DeepEP docs/legacy.md, Performance: H800 + CX7 400 Gb/s) dispatch rows for the NIC shares; "
          "by scripts/scaleout_fit.py")
# deepseek-ai/DeepEP docs/legacy.md, "Low-latency kernels with pure RDMA": H800, one CX7 400 Gb/s per GPU, 128 tokens
# per rank, hidden 7168, top-8, FP8 dispatch, BF16 combine: (EP, dispatch us, combine us)
README_LL = ((8, 77.0, 114.0), (16, 118.0, 195.0), (32, 155.0, 273.0), (64, 173.0, 314.0), (128, 192.0, 369.0),
             (256, 194.0, 360.0))
# same page, "Normal kernels with NVLink and RDMA forwarding": 4096 tokens per rank, hidden 7168, top-4 groups
# (nodes), top-8, FP8 dispatch, BF16 combine; bottleneck GB/s: (EP, link, dispatch, combine)
README_NORMAL = ((8, "NVLink", 153.0, 158.0), (16, "RDMA", 43.0, 43.0), (32, "RDMA", 58.0, 57.0),
                 (64, "RDMA", 51.0, 50.0))
H800_NVLINK_GBPS = 160.0  # README: "H800 (~160 GB/s NVLink maximum bandwidth)"
CX7_GBPS = 50.0  # README: "CX7 InfiniBand 400 Gb/s RDMA network card (~50 GB/s maximum bandwidth)"
README_EXPERTS = 256  # DeepSeek-V3's routed experts (the README's setting); DeepEP's tests assert experts % ranks == 0
README_SMS = 24  # docs/legacy.md example: Buffer.set_num_sms(24)
NET_HOP_US = 2.7  # NCCL's network step, the profiles' fabric latency_us
# NVIDIA/TensorRT-LLM docs/source/blogs/tech_blog/blog18_Optimizing_MoE_Communication_with_One_Sided_AlltoAll_Over_
# NVLink.md (22de8b34, Apache-2.0), "Scaling With Batch Size and EP Size": NVLinkOneSided on GB200 NVL72, DeepSeek-V3
# profile (hidden 7168, top-8 of 256 experts), BF16 dispatch and combine, a perfect router (`bench_moe_comm.py
# --perfect_router`): {EP: ((tokens per rank, dispatch us, combine us), ...)}
BLOG18_ONE_SIDED = {
    8: ((1, 18.9, 31.0), (2, 18.4, 31.1), (4, 18.1, 31.4), (8, 17.6, 31.4), (16, 18.5, 32.6), (32, 18.2, 32.7),
        (64, 22.3, 34.1), (128, 31.7, 38.1), (256, 50.8, 53.0), (512, 89.5, 91.7), (1024, 166.3, 175.6),
        (2048, 311.8, 322.6)),
    16: ((1, 18.8, 30.8), (2, 19.1, 31.4), (4, 18.5, 31.6), (8, 18.9, 31.8), (16, 18.4, 33.0), (32, 20.2, 34.2),
         (64, 24.1, 35.6), (128, 34.6, 39.9), (256, 54.8, 57.0), (512, 97.1, 98.2), (1024, 181.2, 188.2),
         (2048, 343.3, 348.4)),
    32: ((1, 19.8, 31.4), (2, 19.7, 31.3), (4, 19.6, 31.4), (8, 19.4, 32.2), (16, 18.9, 33.4), (32, 21.1, 34.6),
         (64, 26.2, 36.4), (128, 37.8, 41.1), (256, 61.5, 59.7), (512, 109.6, 102.5), (1024, 197.5, 197.5),
         (2048, 373.7, 369.5)),
    64: ((1, 27.8, 32.6), (2, 24.8, 32.2), (4, 29.1, 33.0), (8, 20.4, 33.3), (16, 20.6, 35.0), (32, 23.1, 36.1),
         (64, 28.8, 37.7), (128, 41.6, 44.5), (256, 65.3, 62.9), (512, 115.7, 106.7), (1024, 209.4, 199.2),
         (2048, 399.2, 372.1)),
}
BLOG18_GPU = "gb200"  # its NVLink per GPU is the profile's (blog 18: "uni-directional NVLink Bandwidth ... 900GB/s")
ONE_SIDED_NAMES = ("floor_us", "floor_us_per_rank", "link_share")


@dataclass(frozen=True)
class Row:
    gpu: str
    moe: MoEShape
    tokens: int
    sms: int
    dispatch_us: float
    combine_us: float


@cache
def gpu_links(gpu: str) -> EPLinks:
    """One full node of `gpu` as DeepEP ran it (8 GPUs, 4 on a GB200/GB300 tray): NVLink P2P rate and measured
    NCCL floors from the profile."""
    hw = load_profile(gpu)
    n = hw.topology.num_gpus
    return EPLinks(ranks=n, per_domain=n, fast_gbps=max(lk.p2p_bw_gbps for lk in hw.topology.links),
                   ag_floor_us=domain_floor_busbw(hw, "allgather", n)[0],
                   a2a_floor_us=domain_floor_busbw(hw, "alltoall", n)[0],
                   device_sms=DEVICE_SMS.get(hw.gpu.sm or "", MIN_DEVICE_SMS))


def read_rows(mode: str) -> list[Row]:
    out = []
    for gpu in GPUS:
        with gzip.open(TABLES / gpu / f"deepep_{mode}.csv.gz", "rt", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                moe = MoEShape(int(r["hidden_size"]), int(r["num_topk"]), int(r["num_experts"]))
                if mode == "ll":
                    out.append(Row(gpu, moe, int(r["num_token"]), 0, float(r["dispatch_ms"]) * 1e3,
                                   float(r["combine_ms"]) * 1e3))
                else:
                    out.append(Row(gpu, moe, int(r["num_token"]), int(r["dispatch_sms"]),
                                   float(r["dispatch_transmit_ms"]) * 1e3, float(r["combine_transmit_ms"]) * 1e3))
    return out


NAMES = {("ll", "dispatch"): ("floor_ag_ratio", "floor_us_per_local_expert", "link_share", "sm_row_gbps"),
         ("ll", "combine"): ("floor_ag_ratio", "floor_us_per_local_expert", "link_share", "warp_group_gbps"),
         ("normal", "dispatch"): ("floor_a2a_ratio", "link_share", "channel_gbps"),
         ("normal", "combine"): ("floor_a2a_ratio", "link_share", "channel_gbps")}
START = {"floor_ag_ratio": 1.0, "floor_us_per_local_expert": 0.05, "link_share": 0.5, "sm_row_gbps": 2.0,
         "warp_group_gbps": 30.0, "floor_a2a_ratio": 3.0, "channel_gbps": 25.0}
UPPER = {"link_share": 1.0}  # a share of a link cannot exceed it


def _groups(rows: list[Row]) -> list[tuple[str, MoEShape, int, np.ndarray, np.ndarray]]:
    """Rows grouped by (GPU, shape, SMs): (gpu, shape, sms, row positions, tokens), so each model call is vectorised."""
    by: dict[tuple[str, MoEShape, int], list[int]] = {}
    for i, r in enumerate(rows):
        by.setdefault((r.gpu, r.moe, r.sms), []).append(i)
    return [(g, m, s, np.array(ix), np.array([rows[i].tokens for i in ix], dtype=float))
            for (g, m, s), ix in by.items()]


def predict(mode: str, direction: str, rows: list[Row], p: dict) -> np.ndarray:
    fit = {direction: p, "nic_share": 1.0}
    out = np.empty(len(rows))
    for gpu, moe, sms, ix, T in _groups(rows):
        links = gpu_links(gpu)
        out[ix] = ll_us(direction, T, moe, links, fit=fit) if mode == "ll" else \
            normal_us(direction, T, moe, links, num_sms=sms, fit=fit)
    return out


def measured(direction: str, rows: list[Row]) -> np.ndarray:
    return np.array([r.dispatch_us if direction == "dispatch" else r.combine_us for r in rows])


def fit(mode: str, direction: str, rows: list[Row]) -> dict:
    names = NAMES[mode, direction]
    meas = measured(direction, rows)

    def resid(x: np.ndarray) -> np.ndarray:
        return np.log(predict(mode, direction, rows, dict(zip(names, x, strict=True)))) - np.log(meas)

    res = least_squares(resid, [START[n] for n in names], bounds=([1e-6] * len(names),
                                                                  [UPPER.get(n, np.inf) for n in names]))
    return {n: round(float(v), 5) for n, v in zip(names, res.x, strict=True)}


def median_pct(pred: np.ndarray, meas: np.ndarray) -> float:
    return round(float(np.median(np.abs(pred / meas - 1)) * 100), 1)


def held_out(mode: str, direction: str, rows: list[Row]) -> dict:
    """Median |error| on each GPU's rows from a fit on the other GPUs."""
    out = {}
    for gpu in GPUS:
        train = [r for r in rows if r.gpu != gpu]
        test = [r for r in rows if r.gpu == gpu]
        p = fit(mode, direction, train)
        out[gpu] = {"median_abs_pct": median_pct(predict(mode, direction, test, p), measured(direction, test)),
                    "rows": len(test)}
    return out


def readme_links(ep: int) -> EPLinks:
    """H800 nodes of 8 with one CX7 400 Gb/s each (README); NCCL floors of the H100 SXM profile (same GPU)."""
    base = gpu_links("h100-sxm")
    return EPLinks(ranks=ep, per_domain=min(ep, 8), fast_gbps=H800_NVLINK_GBPS, ag_floor_us=base.ag_floor_us,
                   a2a_floor_us=base.a2a_floor_us, nic_gbps=CX7_GBPS, net_latency_us=NET_HOP_US,
                   device_sms=base.device_sms)


def readme_ll_us(direction: str, ep: int, fit_ll: dict) -> float:
    return float(ll_us(direction, 128, MoEShape(7168, 8, README_EXPERTS), readme_links(ep), fit=fit_ll))


def readme_normal(direction: str, ep: int, fit_n: dict) -> tuple[float, float]:
    """(model us, the README's bandwidth turned into us): DeepEP's tests count NVLink bytes as the tokens a rank
    receives, T D B, and RDMA bytes as (token, node) pairs including its own node, T min(4, nodes) B."""
    moe, links = MoEShape(7168, 8, README_EXPERTS), readme_links(ep)
    from advisor.hardware.wide_ep import dispatch_bytes, distinct_ranks

    B = dispatch_bytes("normal", 7168) if direction == "dispatch" else 2.0 * 7168
    nodes = min(4, ep // 8) if ep > 8 else 1
    row = next(r for r in README_NORMAL if r[0] == ep)
    gbps = row[2] if direction == "dispatch" else row[3]
    count = distinct_ranks(README_EXPERTS, 8, ep) if ep == 8 else nodes
    t_readme = 4096 * count * B / (gbps * 1e3)
    t = normal_us(direction, 4096, moe, links, num_sms=README_SMS, fit=fit_n,
                  domains_per_token=nodes if ep > 8 else None)
    return float(t), t_readme


def fit_nic(mode: str, params_mode: dict) -> float:
    """The NIC share that makes the model meet the README's multi-node dispatch rows (least squares in log)."""
    def resid(x: np.ndarray) -> np.ndarray:
        f = dict(params_mode, nic_share=float(x[0]))
        if mode == "ll":
            return np.array([np.log(readme_ll_us("dispatch", ep, f) / d) for ep, d, _ in README_LL if ep > 8])
        return np.array([np.log(np.divide(*readme_normal("dispatch", ep, f))) for ep, *_ in README_NORMAL if ep > 8])

    return round(float(least_squares(resid, [0.8], bounds=([0.05], [1.0])).x[0]), 4)


def one_sided_rows(eps: tuple[int, ...] | None = None) -> list[tuple[int, int, float, float]]:
    """(EP, tokens per rank, dispatch us, combine us) of TensorRT-LLM's blog figures, the EP sizes `eps` (all)."""
    return [(ep, t, d, c) for ep, rows in BLOG18_ONE_SIDED.items() if eps is None or ep in eps for t, d, c in rows]


def one_sided_predict(direction: str, rows: list[tuple[int, int, float, float]], p: dict) -> np.ndarray:
    """The model (`wide_ep.one_sided_us`) at the blog's points: GB200's NVLink, BF16 both ways, EP = the ranks."""
    moe, node = MoEShape(7168, 8, 256), gpu_links(BLOG18_GPU)
    return np.array([float(one_sided_us(direction, t, moe, replace(node, ranks=ep, per_domain=ep), elem_bytes=2.0,
                                        fit=p)) for ep, t, _, _ in rows])


def one_sided_measured(direction: str, rows: list[tuple[int, int, float, float]]) -> np.ndarray:
    return np.array([d if direction == "dispatch" else c for _, _, d, c in rows])


def fit_one_sided(direction: str, rows: list[tuple[int, int, float, float]]) -> dict:
    """floor + per-rank floor + NVLink share, least squares on log(predicted / measured)."""
    meas = one_sided_measured(direction, rows)

    def resid(x: np.ndarray) -> np.ndarray:
        return np.log(one_sided_predict(direction, rows, dict(zip(ONE_SIDED_NAMES, x, strict=True)))) - np.log(meas)

    res = least_squares(resid, [15.0, 0.05, 0.8], bounds=([1e-6] * 3, [np.inf, np.inf, 1.0]))
    return {n: round(float(v), 5) for n, v in zip(ONE_SIDED_NAMES, res.x, strict=True)}


def one_sided_block() -> dict:
    """TensorRT-LLM's NVLinkOneSided parameters, with the in-sample median and each EP size predicted from a fit on
    the other three."""
    doc: dict = {"source": "TensorRT-LLM tech blog 18 (NVIDIA/TensorRT-LLM 22de8b34), GB200 NVL72, EP 8-64, "
                           "1-2048 tokens per rank; by scripts/scaleout_fit.py"}
    rows = one_sided_rows()
    for direction in ("dispatch", "combine"):
        p = fit_one_sided(direction, rows)
        p["in_sample_median_abs_pct"] = median_pct(one_sided_predict(direction, rows, p),
                                                   one_sided_measured(direction, rows))
        held = {}
        for ep in BLOG18_ONE_SIDED:
            q = fit_one_sided(direction, one_sided_rows(tuple(e for e in BLOG18_ONE_SIDED if e != ep)))
            test = one_sided_rows((ep,))
            held[f"ep{ep}"] = {"median_abs_pct": median_pct(one_sided_predict(direction, test, q),
                                                             one_sided_measured(direction, test)), "rows": len(test)}
        p["held_out"] = held
        doc[direction] = p
    return doc


def build() -> dict:
    doc: dict = {"source": SOURCE}
    for mode in ("ll", "normal"):
        rows = read_rows(mode)
        block: dict = {}
        for direction in ("dispatch", "combine"):
            p = fit(mode, direction, rows)
            p["in_sample_median_abs_pct"] = median_pct(predict(mode, direction, rows, p), measured(direction, rows))
            p["held_out"] = held_out(mode, direction, rows)
            block[direction] = p
        block["nic_share"] = fit_nic(mode, block)
        doc[mode] = block
    doc["one_sided"] = one_sided_block()
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=PARAMS)
    args = ap.parse_args()
    write_atomic(args.out, json.dumps(build(), indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
