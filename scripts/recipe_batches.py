"""The most requests per rank each TensorRT-LLM worker of a disaggregated run admitted, from its recipe: fills the
`prefill_max_batch` and `decode_max_batch` columns of tests/data/bench/silicon_disagg_dev.csv.

    python -m scripts.recipe_batches <srt-slurm git dir> [--csv tests/data/bench/silicon_disagg_dev.csv]

The TensorRT-LLM rows whose `config_ref` names a srt-slurm recipe (`recipes/trtllm/...yaml`, the file InferenceX's
`nvidia-master.yaml` entry points its Dynamo launch at) ran that recipe's `trtllm_config.<side>.max_batch_size`:
TensorRT-LLM's scheduler admits at most that many requests per rank (`_torch/pyexecutor/scheduler.py`: the capacity
scheduler's `max_num_requests` and the micro-batch scheduler's `max_batch_size` are both it), and a benchmark whose
users exceed decode workers x ranks x that number keeps the others waiting for a slot. The recipe is read as it stood
on the measurement date (`measured`): its last revision committed that day or before, else its first (some recipes
first appear in srt-slurm's history with the merge of the submission branch, 2026-03-03, after their runs). Reads a
clone of NVIDIA/srt-slurm (Apache-2.0; a bare clone is enough, only `git log` and `git show` run). A row that names
several candidate recipes takes their value when they agree and stays empty (the engine's default) when they do not;
rows without a recipe stay empty.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

from advisor.files import atomic_output

REPO = Path(__file__).resolve().parents[1]
CSV = REPO / "tests" / "data" / "bench" / "silicon_disagg_dev.csv"
SIDES = ("prefill", "decode")
RECIPE = re.compile(r"(recipes/trtllm/\S+\.yaml)")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@cache
def recipe_batches(repo: Path, path: str, day: str) -> tuple[int | None, ...]:
    """(prefill, decode) `max_batch_size` of recipe `path` as it stood on `day` (YYYY-MM-DD)."""
    import yaml  # PyYAML, a dependency of huggingface_hub; only these data scripts read YAML

    commit = _git(repo, "log", "-1", "--all", "--format=%H", f"--before={day}T23:59:59", "--", path).strip() or \
        (_git(repo, "log", "--all", "--reverse", "--format=%H", "--", path).split() or [""])[0]
    if not commit:
        return (None, None)
    doc: dict[str, Any] = yaml.safe_load(_git(repo, "show", f"{commit}:{path}")) or {}
    config = (doc.get("backend") or {}).get("trtllm_config") or {}
    return tuple(_batch((config.get(side) or {}).get("max_batch_size")) for side in SIDES)


def _batch(v: object) -> int | None:
    return int(v) if isinstance(v, int) and v > 0 else None


def row_batches(repo: Path, row: dict[str, str]) -> tuple[str, str]:
    """The row's (prefill, decode) cells: its recipes' common values, empty where they differ or none is named."""
    if row.get("engine") != "trtllm":
        return ("", "")
    found = {recipe_batches(repo, p, row.get("measured") or "") for p in RECIPE.findall(row.get("config_ref") or "")}
    if len(found) != 1:
        return ("", "")
    pre, dec = ("" if v is None else str(v) for v in found.pop())
    return pre, dec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a clone (or bare git dir) of NVIDIA/srt-slurm")
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args(argv)
    with args.csv.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields, rows = list(reader.fieldnames or []), list(reader)
    for side in SIDES:  # beside the side's other recipe flags
        col = f"{side}_max_batch"
        if col not in fields:
            fields.insert(fields.index(f"{side}_moe_a2a") + 1, col)
    for row in rows:
        row["prefill_max_batch"], row["decode_max_batch"] = row_batches(args.repo, row)
    with atomic_output(args.csv, "w") as out:
        writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    filled = sum(1 for r in rows if r["decode_max_batch"])
    print(f"{args.csv}: decode_max_batch on {filled} of {len(rows)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
