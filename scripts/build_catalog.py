"""Regenerate the bundled catalog from HF config files.

    python -m scripts.build_catalog tests/data/configs [--out advisor/catalog/entries]

Each model in advisor/catalog/facts.toml names its config file (and ModelOpt sidecar) in CONFIG_DIR;
the entry holds the normalized architecture and the published facts, never the config itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advisor.catalog import ENTRIES
from advisor.errors import AdvisorError
from research.catalog_build import build_entry, load_facts, write_entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config_dir", type=Path)
    parser.add_argument("--out", type=Path, default=ENTRIES)
    args = parser.parse_args()
    try:
        for model_id, facts in load_facts().items():
            path = write_entry(build_entry(model_id, facts, args.config_dir), args.out)
            print(f"wrote {path}")
    except AdvisorError as err:
        print(f"build_catalog: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
