"""The SGLang recipe cells of tests/data/bench/silicon_disagg_dev.csv applied again to the file as it is: each row's
`research/disagg_recipes.py: CELLS` from `recipe_cells`, the columns in `disagg_columns.COLUMNS` order (a cell new
to the table joins it). `scripts/recover_disagg.py` writes them with the rest of a row from the sources; this
rewrites them alone when a recipe entry is read again, without those sources.

    python -m scripts.recipe_cells [--csv tests/data/bench/silicon_disagg_dev.csv]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from advisor.calibrate.disagg_columns import COLUMNS
from advisor.files import atomic_output
from research.disagg_recipes import CELLS, recipe_cells

CSV = Path(__file__).resolve().parents[1] / "tests" / "data" / "bench" / "silicon_disagg_dev.csv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args(argv)
    with args.csv.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row |= recipe_cells(row)
    with atomic_output(args.csv, "w") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: row.get(k, "") for k in COLUMNS} for row in rows)
    filled = {c: sum(1 for r in rows if r[c]) for c in CELLS}
    print(f"{args.csv}: " + ", ".join(f"{c} on {n}" for c, n in filled.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
