"""docs/accuracy.md's kernel-accuracy block: each kernel model against its measured table, in sample and on every
GPU left out of the fit (median |error|, from `advisor/cost/kernel_params.json`, which scripts/fit_kernels.py
writes).

    python -m scripts.kernel_accuracy [--update [FILE]]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advisor.cost import kernels

REPO = Path(__file__).resolve().parents[1]

NAMES = {"gemm": "dense GEMM", "moe": "fused MoE layer", "attention": "decode attention (GQA)",
         "mla": "MLA decode (growth with context)", "prefill": "prefill attention (GQA)",
         "mla_prefill": "MLA prefill (growth with prompt^2)", "gdn_decode": "Gated DeltaNet decode",
         "gdn_prefill": "Gated DeltaNet prefill", "dsa": "DSA indexer (sparse attention module beyond MLA)",
         "marlin_moe": "W4A16 MoE layer, Marlin (what prices INT4 experts)"}


def table() -> str:
    doc = kernels.params()
    gpus = sorted({g for m in NAMES for g in doc[m]["logo"]})
    lines = ["Each kernel model against its measured table (aiconfigurator's collectors, `tests/data/kernels/`): "
             "median |error| in sample, and for each GPU when the model is refitted without that GPU's rows (its "
             "spec sheet alone carries it). Written by `scripts/kernel_accuracy.py` from "
             "`advisor/cost/kernel_params.json`.", "",
             "| kernel | rows | in sample | " + " | ".join(f"{g} held out" for g in gpus) + " |",
             "|---|---:|---:|" + "---:|" * len(gpus)]
    for m, name in NAMES.items():
        logo = doc[m]["logo"]
        cells = [f"{logo[g]['median_abs_pct']:.0f}%" if g in logo else "-" for g in gpus]
        lines.append(f"| {name} | {doc[m]['in_sample']['n']:,} | {doc[m]['in_sample']['median_abs_pct']:.0f}% | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", type=Path, nargs="?", const=REPO / "docs" / "accuracy.md", metavar="FILE",
                    help="replace the kernel-accuracy block of FILE (default: docs/accuracy.md)")
    args = ap.parse_args()
    if args.update:
        from scripts.readme_block import replace_block

        replace_block(args.update, "kernel-accuracy", table())
    else:
        print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
