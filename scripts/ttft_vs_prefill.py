"""How first-token time grows with the prefill, measured and predicted: per users and prompt length, TTFT against one
prompt's prefill alone (`scripts/step_breakdown.py: breakdown`, shipped terms) across the rows' TP sizes, fitted
as TTFT = a + k x prefill, for the measurements and for the prediction without its per-request time. Where the two
k differ, the model's waiting for other prompts' prefill (staggered queue, the benchmark's waves) has the wrong
size; where only a differs, the fixed time does (README, Calibration).

    python -m scripts.ttft_vs_prefill ROWS.csv --hw b200-sxm --engine vllm [--model Llama-3.1-70B] [--max-users N]

ROWS.csv: a measurement file (default columns of tests/data/bench/silicon_dev.csv). Milliseconds throughout.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scripts.step_breakdown import breakdown, selected

REPO = Path(__file__).resolve().parents[1]

MIN_ROWS = 3  # a line through fewer points says nothing about its slope


def line(prefill: np.ndarray, ttft: np.ndarray) -> tuple[float, float]:
    """Least-squares (a, k) of ttft = a + k prefill."""
    (a, k), *_ = np.linalg.lstsq(np.vstack([np.ones_like(prefill), prefill]).T, ttft, rcond=None)
    return float(a), float(k)


def shapes(rows: Sequence[Any], parts: list[dict[str, float]]) -> dict[tuple[int, int], dict[str, float]]:
    """Per (users per DP rank, stated prompt length) with MIN_ROWS rows and more than one prefill time: the
    measured and predicted (a, k), the predicted one without the per-request time."""
    groups: dict[tuple[int, int], list[dict[str, float]]] = defaultdict(list)
    for r, d in zip(rows, parts, strict=True):
        if np.isfinite(d["ttft_ms"]):
            groups[(r.concurrency // max(r.dp, 1), r.input_len or 0)].append(d)
    out = {}
    for key, ds in sorted(groups.items()):
        p = np.array([d["prefill"] for d in ds])
        if len(ds) < MIN_ROWS or np.ptp(p) <= 1e-9 * p.max():
            continue
        a, k = line(p, np.array([d["ttft_ms"] for d in ds]))
        a_m, k_m = line(p, np.array([d["ttft_pred"] - d["request_ms"] for d in ds]))
        out[key] = {"rows": len(ds), "a": a, "k": k, "a_model": a_m, "k_model": k_m}
    return out


def main() -> int:
    got = selected("ttft_vs_prefill", __doc__)
    if isinstance(got, int):
        return got
    bucket, terms = got
    found = shapes(bucket.rows, breakdown(bucket, terms))
    print(f"per-request time {terms.request_overhead_us / 1e3:.1f} ms (not in the model's line below)")
    print("users prompt rows | measured: a ms + k x prefill | model: a ms + k x prefill")
    for (users, prompt), s in found.items():
        print(f"{users:5d} {prompt:6d} {s['rows']:4d} | {s['a']:7.0f} + {s['k']:5.2f} | "
              f"{s['a_model']:7.0f} + {s['k_model']:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
