"""Print the README accuracy table (hardware x engine x metric: n, median, p90 |% error|) from the shipped
calibration files' cross-validated `cv` fields.

Usage: python scripts/accuracy_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without install

from advisor.calibrate.store import SHIPPED, read_calibration  # noqa: E402

METRICS = (("tpot_ms", "TPOT"), ("ttft_ms", "TTFT"), ("output_tok_s", "output tok/s"))


def main() -> int:
    """One markdown row per (hardware, engine, metric) with cross-validated n, median and p90 |error|."""
    print("| hardware | engine | metric | n | median abs err | p90 abs err | CV | rows from |")
    print("|---|---|---|---:|---:|---:|---|---|")
    for path in sorted(SHIPPED.glob("*.json")):
        cal = read_calibration(path)
        cv_how = cal.method.split("CV: ")[-1]
        for key, label in METRICS:
            s = cal.cv.get(key)
            if not s or not s.get("n"):
                continue
            print(f"| {cal.hardware} | {cal.engine} | {label} | {int(s['n'])} | {s['median_abs_pct']:.1f}% | "
                  f"{s['p90_abs_pct']:.1f}% | {cv_how} | {', '.join(cal.files)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
