"""What the fitted per-request time (`Terms.request_overhead_us`) stands in for: per GPU, engine, model, release
and benchmark client, the measured TTFT at up to `--max-users` users minus the TTFT predicted with the shipped
terms but no per-request time (the prefill, its queue, the benchmark's rounds and scheduling options), median
over the rows in ms, in measured TPOTs, and per routed expert per MoE layer (us). The numbers the README's
Calibration section quotes.

Usage: python -m scripts.ttft_floor [--max-users 8] [--files tests/data/bench/silicon_dev.csv ...]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from advisor.calibrate.predict_rows import run_bucket
from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements
from advisor.calibrate.store import terms_for

ROOT = Path(__file__).resolve().parents[1]

FILES = [ROOT / "tests/data/bench/silicon_dev.csv", ROOT / "tests/data/bench/public_clean.csv"]
# tests/data/bench/README.md: length_ratio 0.8 = InferenceX's client against the engine's own server,
# 1 = NVIDIA's gap-analysis runs (aiperf, Dynamo images)
CLIENTS = {0.8: "InferenceX", 1.0: "gap analysis"}


Key = tuple[str, str, str, str, str]  # GPU, engine, model, release, client


def excess(files: list[Path], max_users: int) -> list[tuple[Key, int, float, float, float | None]]:
    """Per (GPU, engine, model, release, client): rows, median excess ms, in TPOTs, per expert-layer us."""
    rows = [r for f in files for r in read_measurements(f).rows]
    _, buckets = prepare(rows)
    groups: dict[Key, list[float]] = defaultdict(list)
    steps: dict[Key, list[float]] = defaultdict(list)
    scale: dict[Key, float] = {}
    for (hw, engine), b in sorted(buckets.items()):
        terms = terms_for(b.hw, engine)[0].model_copy(update={"request_overhead_us": 0.0})
        pred = run_bucket(b, terms)["ttft_ms"]
        experts = np.broadcast_to(b.features.experts * b.features.moe_layers, (len(b.rows),))
        for j, r in enumerate(b.rows):
            if r.ttft_ms is None or r.concurrency > max_users:
                continue
            key: Key = (hw, engine, r.model.split("/")[-1], r.engine_version or "not stated",
                   CLIENTS.get(r.length_ratio or 0.0, "not stated"))
            groups[key].append(r.ttft_ms - float(pred[j]))
            if r.tpot_ms:
                steps[key].append((r.ttft_ms - float(pred[j])) / r.tpot_ms)
            scale[key] = float(experts[j])
    return [(k, len(v), float(np.median(v)), float(np.median(steps[k])) if steps[k] else float("nan"),
             1e3 * float(np.median(v)) / scale[k] if scale[k] else None) for k, v in sorted(groups.items())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-users", type=int, default=8)
    ap.add_argument("--files", type=Path, nargs="+", default=FILES)
    a = ap.parse_args()
    print("| GPU / engine | model | release | client | rows | measured - predicted TTFT, ms | in TPOTs | "
          "per expert per MoE layer, us |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for (hw, engine, model, version, client), n, ms, tpots, per in excess(a.files, a.max_users):
        print(f"| {hw} / {engine} | {model} | {version} | {client} | {n} | {ms:.0f} | {tpots:.1f} | "
              f"{'-' if per is None else f'{per:.1f}'} |")


if __name__ == "__main__":
    main()
