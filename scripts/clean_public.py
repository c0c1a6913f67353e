"""Clean tests/data/bench/public.csv (wide, annotated) into the measurement CSV that `advisor check` reads.

Usage: python -m scripts.clean_public tests/data/bench/public.csv -o tests/data/bench/public_clean.csv
Prints kept/dropped counts with reasons to stderr; the mapping lives in research/public.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advisor.errors import AdvisorError
from research.public import clean_public, read_public, write_csv


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, clean, write atomically, report to stderr; exit 2 on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path, help="public.csv (wide schema, see tests/data/bench/README.md)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="cleaned measurement CSV to write")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every dropped row")
    args = parser.parse_args(argv)
    try:
        rows = read_public(args.input)
        result = clean_public(rows)
        write_csv(result.kept, args.output)
    except AdvisorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"kept {len(result.kept)} of {len(rows)} rows -> {args.output}", file=sys.stderr)
    print(f"dropped {len(result.dropped)}:", file=sys.stderr)
    for category, count in result.summary().most_common():
        print(f"  {count:5d}  {category}", file=sys.stderr)
    if args.verbose:
        for number, reason in result.dropped:
            print(f"  row {number}: {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
