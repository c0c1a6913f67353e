"""Regenerate the shipped calibrations (advisor/calibrations/*.json) from the shared measurements.

    python scripts/refit_calibrations.py [SHARED_BENCH_DIR]   (default ../shared/data/bench)

RTX PRO 6000 Server / vLLM: the case study plus the cleaned public.csv rows; every (hardware, engine) of
silicon_dev.csv listed in PAIRS. A pair is left out when its fit is not physical (GB200 TRT-LLM: 16 rows
from 2 models drove step overhead and the collective scale to their bounds).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without install

from advisor.calibrate.public import clean_public, read_public, write_csv  # noqa: E402
from advisor.calibrate.store import shipped_path  # noqa: E402
from advisor.commands.calibrate import calibrate_doc  # noqa: E402

PAIRS = [("h100-sxm", "vllm"), ("h100-sxm", "sglang"), ("h100-sxm", "trtllm"), ("b200-sxm", "vllm"),
         ("b200-sxm", "sglang"), ("b200-sxm", "trtllm"), ("b300-sxm", "sglang")]


def main() -> int:
    bench = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared/data/bench"
    with tempfile.TemporaryDirectory() as tmp:
        public = Path(tmp) / "public_clean.csv"
        write_csv(clean_public(read_public(bench / "public.csv")).kept, public)
        jobs = [("rtx-pro-6000-server", "vllm", [bench / "case_study.csv", public])]
        jobs += [(hw, eng, [bench / "silicon_dev.csv"]) for hw, eng in PAIRS]
        for hw, engine, files in jobs:
            doc = calibrate_doc([str(f) for f in files], hw, engine, shipped_path(hw, engine))
            cv = doc.get("cv", {})
            print(hw, engine, {k: round(v, 3) for k, v in doc["terms"].items()},
                  {m: round(s.get("median_abs_pct", float("nan")), 1) for m, s in cv.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
