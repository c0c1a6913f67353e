"""How much of the kernel tables ran from L2: per GPU and format, weight-bound calls (MoE at <= 8 tokens, GEMMs at
m <= 8) measured against the DRAM line t0 + W / BW, below and above the GPU's L2 size (hwprofiles `l2_bytes`).

    python -m scripts.kernel_l2 [--kernels tests/data/kernels]

The collectors re-read one set of weights call after call: aiconfigurator `collector/vllm/collect_moe.py:
run_moe_torch` times one `fused_experts` weight set, so a call whose touched experts fit in L2 reads them from
there; `collect_gemm.py: run_gemm` cycles 6 copies of a BF16/FP8 weight (`outside_loop_count`) but 1 of an
NVFP4 one. A serving step reads every layer's own weights once, from DRAM. W is the working set: touched experts
x their TP slice (one call's routing; a power-law row cycles 5, so its set is larger), or copies x n x k, in
bytes incl. scales. t0 is the median time of the smallest tenth of working sets, BW the median bytes / (t - t0)
of those >= 2 x L2. Ratios are median measured / line; below 1 the call ran faster than DRAM allows.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from scripts.kernel_tables import BPP  # (bytes per weight element, the fit's)

REPO = Path(__file__).resolve().parents[1]

GEMM_COPIES = {"bfloat16": 6, "fp8": 6, "nvfp4": 1}  # collect_gemm.py: outside_loop_count
MAX_TOKENS = 8  # weight-bound: the read, not the FLOPs, sets the time


Point = tuple[str, str, float, float, float]  # gpu, format, bytes one call reads, working set, latency us


def working_sets(table: str, rows: list[dict[str, str]]) -> list[Point]:
    """The weight-bound rows of a kernel slice, with the weight bytes one call reads and the working set the
    collector cycles through (a GEMM's copies; the table's latency is per call)."""
    out = []
    for r in rows:
        fmt = r["fmt"].split("/")[0]
        if table == "moe" and int(r["T"]) <= MAX_TOKENS and fmt in BPP:
            w, copies = float(r["n_act"]) * float(r["mats"]) * int(r["h"]) * int(r["I"]) / int(r["tp"]) * BPP[fmt], 1
        elif table == "gemm" and int(r["m"]) <= MAX_TOKENS and fmt in GEMM_COPIES:
            w, copies = int(r["n"]) * int(r["k"]) * BPP[fmt], GEMM_COPIES[fmt]
        else:
            continue
        out.append((r["gpu"], r["fmt"], w, copies * w, float(r["lat_us"])))
    return out


def residency(points: list[Point], l2: dict[str, int]) -> list[dict[str, object]]:
    """Per (gpu, format) with enough rows on both sides: the DRAM line and the median measured / line below
    (L2 / 8 < W <= L2) and above (L2 < W <= 8 L2) the L2 size."""
    out = []
    for gpu, fmt in sorted({p[:2] for p in points}):
        if gpu not in l2:
            continue
        w, ws, t = (np.array([p[j] for p in points if p[:2] == (gpu, fmt)]) for j in (2, 3, 4))
        size = l2[gpu]
        small, big = ws <= np.quantile(ws, 0.1), ws >= 2 * size
        below, above = (ws > size / 8) & (ws <= size), (ws > size) & (ws <= 8 * size)
        if small.sum() < 3 or big.sum() < 3 or below.sum() < 3 or above.sum() < 3:
            continue
        t0 = float(np.median(t[small]))
        bw = float(np.median(w[big] / np.maximum(t[big] - t0, 1e-3)))  # bytes per us
        ratio = t / (t0 + w / bw)
        out.append({"gpu": gpu, "fmt": fmt, "t0_us": t0, "dram_tb_s": bw / 1e6, "n_below": int(below.sum()),
                    "below": float(np.median(ratio[below])), "n_above": int(above.sum()),
                    "above": float(np.median(ratio[above]))})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=Path, default=REPO / "tests" / "data" / "kernels")
    args = ap.parse_args()
    from advisor.hardware import load_profile

    l2 = {}
    for path in sorted((REPO / "hwprofiles").glob("*.toml")):
        size = load_profile(path.stem).gpu.l2_bytes
        if size:
            l2[path.stem] = size
    stats = {}
    for table in ("moe", "gemm"):
        path = args.kernels / f"{table}.csv"
        try:
            with path.open(newline="") as fh:
                stats[table] = residency(working_sets(table, list(csv.DictReader(fh))), l2)
        except (OSError, KeyError, ValueError) as e:
            print(f"error: {path}: not a kernel slice ({type(e).__name__}: {e})", file=sys.stderr)
            return 2
    print("| table | GPU | format | t0 us | DRAM line TB/s | W in (L2/8, L2]: n, measured/line | "
          "W in (L2, 8 L2]: n, measured/line |")
    print("|---|---|---|---:|---:|---:|---:|")
    for table, rows in stats.items():
        for s in rows:
            print(f"| {table} | {s['gpu']} | {s['fmt']} | {s['t0_us']:.1f} | {s['dram_tb_s']:.2f} | "
                  f"{s['n_below']}, {s['below']:.2f} | {s['n_above']}, {s['above']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
