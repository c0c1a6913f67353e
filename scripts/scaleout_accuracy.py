"""docs/collectives-scaleout.md's scaleout-accuracy block: the wide-EP dispatch/combine model against DeepEP's tables
(each GPU held out), DeepEP's README and TensorRT-LLM's one-sided all-to-all figures (each EP size held out),
multi-node allreduce against published nccl-tests figures, and the latency floor as nodes are added. Reads the
shipped `advisor/hardware/wide_ep_params.json` (scripts/scaleout_fit.py).

    python -m scripts.scaleout_accuracy [--update [FILE]]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from advisor.hardware import load_profile
from advisor.hardware.cluster import Cluster, Span
from advisor.hardware.collective_time import collective_time_us
from advisor.hardware.comm import bus_factor
from advisor.hardware.ep_exchange import exchange_us
from advisor.hardware.schema import Fabric
from advisor.hardware.wide_ep import MoEShape, params
from scripts.scaleout_fit import BLOG18_ONE_SIDED, GPUS, README_LL, README_NORMAL, readme_ll_us, readme_normal

REPO = Path(__file__).resolve().parents[1]
NAME = "scaleout-accuracy"
GIB8 = 8 * 2**30
# Published multi-node NCCL allreduce bus bandwidths: (who, where, profile, fabric (NICs, GB/s per NIC), nodes,
# published GB/s low, high, conditions). Nodes: 4 where the source gives none (NCCL runs rings from 3 nodes up,
# S. Jeaugey, https://github.com/NVIDIA/nccl-tests/issues/160).
PUBLISHED = (
    ("NVIDIA (S. Jeaugey)", "https://github.com/NVIDIA/nccl-tests/issues/160", "a100-sxm", (8, 25.0), 4, 192.0,
     192.0, "\"24 [GB/s per 200 Gb/s NIC] (what we see ourselves in general on perfect setups)\", x 8 NICs; the "
     "source of NIC_SHARE, so not a check"),
    ("NVIDIA (AddyLaddy)", "https://github.com/NVIDIA/nccl/issues/812", "a100-sxm", (8, 25.0), 4, 192.0, 192.0,
     "DGX A100, 8 x 200 Gb/s InfiniBand: \"we measure 192GB/s AllReduce BusBW\""),
    ("NVIDIA (AddyLaddy)", "https://github.com/NVIDIA/nccl-tests/issues/290", "h100-sxm", (8, 50.0), 4, 368.0,
     384.0, "\"For NDR @ 400Gbps you should see 46-48GB/s per NIC\", x 8 NICs of a DGX H100, NCCL_ALGO=RING"),
    ("Georgia Tech on Voltage Park (not a vendor page)",
     "https://github.com/ZiyanIshani/vpbenchmarking/blob/main/results/nccl_multinode/nccl_multinode_summary.md",
     "h100-sxm", (8, 50.0), 4, 330.93, 330.93, "4 x 8 H100, '3.2 Tbps InfiniBand (400 Gbps per port, 3 active ports "
     "per node)', NCCL 2.24.3, 8 GB; the page contradicts itself on the ports"),
)


def pct(model: float, meas: float) -> str:
    return f"{round(100 * (model / meas - 1)):+d}%"


def deepep_tables() -> list[str]:
    doc = params()
    lines = ["DeepEP dispatch/combine against its single-node tables (`tests/data/kernels/<gpu>/deepep_*.csv.gz`, "
             "one full node each: EP 8, EP 4 on a GB200/GB300 tray): median |error| in sample and for each GPU "
             "predicted from a fit on the other four.", "",
             "| kernel | in sample | " + " | ".join(f"{g} held out" for g in GPUS) + " |",
             "|---|---:|" + "---:|" * len(GPUS)]
    for mode, label in (("ll", "low-latency"), ("normal", "normal")):
        for direction in ("dispatch", "combine"):
            p = doc[mode][direction]
            cells = [f"{p['held_out'][g]['median_abs_pct']:.0f}% ({p['held_out'][g]['rows']})" for g in GPUS]
            lines.append(f"| {label} {direction} | {p['in_sample_median_abs_pct']:.0f}% | " + " | ".join(cells) + " |")
    lines += ["", "Shipped parameters (fit on all five GPUs): " + "; ".join(
        f"{mode} {d}: " + ", ".join(f"{k} {v:g}" for k, v in doc[mode][d].items() if isinstance(v, float)
                                   and not k.startswith("in_sample"))
        for mode in ("ll", "normal") for d in ("dispatch", "combine"))
        + f"; NIC share: low-latency {doc['ll']['nic_share']:g}, normal {doc['normal']['nic_share']:g}."]
    return lines


def readme_checks() -> list[str]:
    doc = params()
    lines = ["", "DeepEP's own figures (deepseek-ai/DeepEP `docs/legacy.md`, Performance: H800 with ~160 GB/s NVLink "
             "and one ConnectX-7 400 Gb/s per GPU; low-latency at 128 tokens per rank, normal at 4096 with 24 SMs; "
             "hidden 7168, top-8, 256 experts). The NIC share of each mode is fitted to its multi-node dispatch rows "
             "(marked fit); the combine rows and EP 8 (NVLink only) are checks. Normal-mode bandwidths are turned "
             "into times with DeepEP's byte counts (the tokens a rank receives over NVLink; (token, node) pairs "
             "over RDMA, at most 4 nodes per token with its group-limited routing).", "",
             "| mode | EP | dispatch us (README) | model | error | combine us (README) | model | error |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for ep, d, c in README_LL:
        md, mc = readme_ll_us("dispatch", ep, doc["ll"]), readme_ll_us("combine", ep, doc["ll"])
        tag = " (fit)" if ep > 8 else ""
        lines.append(f"| low-latency | {ep} | {d:.0f} | {md:.0f} | {pct(md, d)}{tag} | {c:.0f} | {mc:.0f} | "
                     f"{pct(mc, c)} |")
    for ep, *_ in README_NORMAL:
        (md, rd), (mc, rc) = readme_normal("dispatch", ep, doc["normal"]), readme_normal("combine", ep, doc["normal"])
        tag = " (fit)" if ep > 8 else ""
        lines.append(f"| normal | {ep} | {rd:.0f} | {md:.0f} | {pct(md, rd)}{tag} | {rc:.0f} | {mc:.0f} | "
                     f"{pct(mc, rc)} |")
    return lines


def one_sided_checks() -> list[str]:
    """TensorRT-LLM's NVLinkOneSided against the figures it is fitted on, each EP size predicted from the others."""
    p = params()["one_sided"]
    lines = ["", "TensorRT-LLM's NVLinkOneSided all-to-all (its default inside one NVLink domain) against NVIDIA's "
             "published figures (TensorRT-LLM tech blog 18, GB200 NVL72, DeepSeek-V3 shape, BF16 both ways, 1-2048 "
             "tokens per rank): median |error| in sample and for each EP size predicted from a fit on the other three.",
             "", "| kernel | in sample | " + " | ".join(f"EP {ep} held out" for ep in BLOG18_ONE_SIDED) + " |",
             "|---|---:|" + "---:|" * len(BLOG18_ONE_SIDED)]
    for direction in ("dispatch", "combine"):
        q = p[direction]
        cells = [f"{q['held_out'][f'ep{ep}']['median_abs_pct']:.0f}% ({q['held_out'][f'ep{ep}']['rows']})"
                 for ep in BLOG18_ONE_SIDED]
        lines.append(f"| one-sided {direction} | {q['in_sample_median_abs_pct']:.0f}% | " + " | ".join(cells) + " |")
    lines += ["", "Shipped parameters: " + "; ".join(
        f"{d}: " + ", ".join(f"{k} {v:g}" for k, v in p[d].items() if isinstance(v, float)
                             and not k.startswith("in_sample")) for d in ("dispatch", "combine")) + "."]
    return lines


def _cluster(profile: str, nics: int, gbps: float, nodes: int) -> Cluster:
    fab = Fabric(id="check", name=f"{nics} x {gbps:g} GB/s", kind="infiniband", nics_per_node=nics, nic_gbps=gbps,
                 gpudirect_rdma=True, latency_us=2.7, source="the published system's NICs (table row)")
    return Cluster(node=load_profile(profile), nodes=nodes, fabric=fab)


def busbw(cluster: Cluster, op: str, S: float) -> float:
    """nccl-tests bus bandwidth the model gives for one op of S bytes over the whole cluster."""
    n = cluster.gpus
    t = float(collective_time_us(cluster, op, S, n))
    return bus_factor(op, n) * S / (t * 1e3)


def nccl_checks() -> list[str]:
    lines = ["", "Multi-node allreduce, bus bandwidth at 8 GiB, against published nccl-tests figures (the model's NCCL "
             "picks the faster of the flat ring and the two-level allreduce; at 8 GiB it is the ring, bounded by the "
             "NICs):", "", "| source | system | nodes | published GB/s | model GB/s | error | conditions |",
             "|---|---|---:|---:|---:|---:|---|"]
    for who, url, prof, (nics, gbps), nodes, lo, hi, cond in PUBLISHED:
        bw = busbw(_cluster(prof, nics, gbps, nodes), "allreduce", GIB8)
        pub = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
        err = pct(bw, lo) if lo == hi else ("in range" if lo <= bw <= hi else pct(bw, lo if bw < lo else hi))
        lines.append(f"| [{who}]({url}) | {prof}, {nics} x {gbps * 8:g} Gb/s | {nodes} | {pub} | {bw:.0f} | {err} | "
                     f"{cond} |")
    vp = _cluster("h100-sxm", 8, 50.0, 4)
    ar = float(collective_time_us(vp, "allreduce", 8.0, vp.gpus, "nccl"))
    ag = float(collective_time_us(vp, "allgather", 512.0, vp.gpus, "nccl"))
    lines += ["", "Small messages on the same Georgia Tech page (not a vendor figure): an 8-byte allreduce of 38.37 us "
              f"and a 512-byte all-gather of 49.68 us on its 4 nodes; the model gives {ar:.1f} us ({pct(ar, 38.37)}) "
              f"and {ag:.1f} us ({pct(ag, 49.68)})."]
    return lines


def floor_table() -> list[str]:
    """Small-message times as nodes are added (model only: no published multi-node floor under NVIDIA's name)."""
    hw = load_profile("h100-sxm")
    fab = hw.fabrics[0]
    lines = ["", f"The latency floor as nodes are added (model; 8x H100 nodes over {fab.name}): NCCL's 8-byte "
             "allreduce and all-gather of every GPU, a 64 KiB PP send between nodes, and a DeepEP low-latency "
             "dispatch of 128 tokens per rank (DeepSeek-V3 shape: hidden 7168, top-8 of 256) over EP = all GPUs.", "",
             "| nodes | GPUs | allreduce 8 B us | all-gather 8 B us | p2p 64 KiB us | LL dispatch us | LL combine us |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    moe = MoEShape(7168, 8, 256)
    for nodes in (1, 2, 4, 8, 16):
        cl = Cluster(node=hw, nodes=nodes, fabric=fab if nodes > 1 else None)
        n = cl.gpus
        span = cl.span_of(n)
        ar = float(collective_time_us(cl, "allreduce", 8.0, span, "nccl"))
        ag = float(collective_time_us(cl, "allgather", 8.0 * n, span, "nccl"))
        p2p = float(collective_time_us(cl, "p2p", 65536.0, Span(2, 2, 2, 1) if nodes > 1 else 2, "nccl"))
        S = 128 * 8 * 7168 * (1 + 4 / 128)
        d = float(exchange_us(cl, "dispatch", np.array(S), span, "sglang", "deepep_ll", moe=moe))
        c = float(exchange_us(cl, "combine", np.array(128 * 8 * 7168 * 2.0), span, "sglang", "deepep_ll", moe=moe))
        lines.append(f"| {nodes} | {n} | {ar:.1f} | {ag:.1f} | {p2p:.1f} | {d:.0f} | {c:.0f} |")
    return lines


def block() -> str:
    head = ["Written by `python -m scripts.scaleout_accuracy` from `advisor/hardware/wide_ep_params.json` "
            "(`scripts/scaleout_fit.py`) and the profiles; do not edit by hand.", ""]
    return "\n".join(head + deepep_tables() + readme_checks() + one_sided_checks() + nccl_checks()
                     + floor_table()) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", type=Path, nargs="?", const=REPO / "docs" / "collectives-scaleout.md",
                    metavar="FILE", help="replace the scaleout-accuracy block of FILE")
    args = ap.parse_args()
    if args.update:
        from scripts.readme_block import replace_block

        replace_block(args.update, NAME, block())
    else:
        print(block(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
