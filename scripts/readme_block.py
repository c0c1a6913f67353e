"""The generated blocks of the README and docs/ (text between `<!-- NAME:start -->` and `<!-- NAME:end -->`): which
file each lives in (exactly one), reading one, and replacing one with what its generator writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from advisor.files import write_atomic

REPO = Path(__file__).resolve().parents[1]

# block -> the one file (from the repo root) that holds it, and the script that writes it (`python -m scripts.X
# --update`); tests/test_docs.py checks that every marker in README.md and docs/*.md is here, once, in its file
BLOCKS: dict[str, tuple[str, str]] = {
    "rank-output": ("README.md", "front_page"),
    "accuracy-summary": ("README.md", "front_page"),
    "capacity": ("docs/capacity.md", "capacity_examples"),
    "quality": ("docs/quality.md", "quality_examples"),
    "case-study": ("docs/accuracy.md", "case_study"),
    "kernel-accuracy": ("docs/accuracy.md", "kernel_accuracy"),
    "serving-accuracy": ("docs/accuracy.md", "accuracy_table"),
    "trtllm-public": ("docs/accuracy.md", "trtllm_public"),
    "memory-logs": ("docs/accuracy.md", "memory_logs"),
    "comm-accuracy": ("docs/accuracy.md", "comm_accuracy"),
    "wideep-moe": ("docs/accuracy.md", "wideep_moe_check"),
    "racks-large": ("docs/accuracy.md", "large_deployments"),
    "scaleout-accuracy": ("docs/collectives-scaleout.md", "scaleout_accuracy"),
    "measurement-columns": ("docs/measurements.md", "schema_doc"),
    "disagg-measurement-columns": ("docs/measurements.md", "schema_doc"),
    "disagg-accuracy": ("docs/accuracy.md", "disagg_accuracy"),
    "fitted-terms": ("docs/accuracy.md", "fitted_terms"),
    "engine-releases": ("docs/engines.md", "schema_doc"),
}


def home(name: str) -> Path:
    """The file that holds block NAME."""
    return REPO / BLOCKS[name][0]


def read_block(name: str, path: Path | None = None) -> str:
    """The text between the NAME markers of `path` (default: the block's home), as its generator wrote it."""
    path = path or home(name)
    start, end = f"<!-- {name}:start -->\n", f"<!-- {name}:end -->"
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{path}: markers <!-- {name}:start --> / {end} not found")
    return text.split(start, 1)[1].split(end, 1)[0]


def replace_block(target: Path, name: str, body: str) -> None:
    """Write `body` between the NAME markers of the file `target` (the block's home, `home(name)`, or a copy of
    it), atomically; nothing else in the file changes."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = target.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{target}: markers {start} / {end} not found")
    pre, rest = text.split(start, 1)
    _, post = rest.split(end, 1)
    write_atomic(target, pre + start + "\n" + body.rstrip("\n") + "\n" + end + post)


def advisor_cli(*args: str) -> str:
    """stdout of `advisor ARGS` run offline from this checkout (bundled catalog, 200 columns); exit if it fails."""
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env)
    if done.returncode:
        raise SystemExit(f"advisor {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
