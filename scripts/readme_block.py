"""Replace a generated block of the README (between `<!-- NAME:start -->` and `<!-- NAME:end -->`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from advisor.files import write_atomic  # the calling scripts put the checkout on sys.path


def replace_block(readme: Path, name: str, body: str) -> None:
    """Write `body` between the NAME markers, atomically; nothing else in the file changes."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = readme.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{readme}: markers {start} / {end} not found")
    pre, rest = text.split(start, 1)
    _, post = rest.split(end, 1)
    write_atomic(readme, pre + start + "\n" + body.rstrip("\n") + "\n" + end + post)


def advisor_cli(*args: str) -> str:
    """stdout of `advisor ARGS` run offline from this checkout (bundled catalog, 200 columns); exit if it fails."""
    repo = Path(__file__).resolve().parents[1]
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, cwd=repo,
                          env=env)
    if done.returncode:
        raise SystemExit(f"advisor {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
