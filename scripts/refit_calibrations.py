"""Regenerate the shipped calibrations (advisor/calibrations/*.json) from the measurements in the repo.

    python scripts/refit_calibrations.py [BENCH_DIR]   (default tests/data/bench)

RTX PRO 6000 Server / vLLM: the case study (advisor/examples/case_study.csv) plus the cleaned public rows
(public_clean.csv, written from public.csv by scripts/clean_public.py); every (hardware, engine) of
silicon_dev.csv listed in PAIRS. A pair is left out when its fit is not physical (GB200 TRT-LLM: 16 rows
from 2 models drove step overhead and the collective scale to their bounds).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without install

from advisor.calibrate.store import shipped_path  # noqa: E402
from advisor.commands.calibrate import calibrate_doc  # noqa: E402

PAIRS = [("h100-sxm", "vllm"), ("h100-sxm", "sglang"), ("h100-sxm", "trtllm"), ("b200-sxm", "vllm"),
         ("b200-sxm", "sglang"), ("b200-sxm", "trtllm"), ("b300-sxm", "sglang")]


def main() -> int:
    bench = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "data" / "bench"
    jobs = [("rtx-pro-6000-server", "vllm", [REPO / "advisor" / "examples" / "case_study.csv",
                                             bench / "public_clean.csv"])]
    jobs += [(hw, eng, [bench / "silicon_dev.csv"]) for hw, eng in PAIRS]
    for hw, engine, files in jobs:
        # a refit replaces the shipped file on purpose (physics changed): force past the not-worse guard
        doc = calibrate_doc([str(f) for f in files], hw, engine, shipped_path(hw, engine), force=True)
        cv = doc.get("cv", {})
        print(hw, engine, {k: round(v, 3) for k, v in doc["terms"].items()},
              {m: round(s.get("median_abs_pct", float("nan")), 1) for m, s in cv.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
