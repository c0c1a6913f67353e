"""Every command the README shows runs as written (offline, from the repo root) and exits 0."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _examples() -> list[str]:
    """Indented `advisor ...` lines of the README, comments dropped (the set-up commands are tested by CI)."""
    out = []
    for line in README.splitlines():
        m = re.match(r"^ {4}(advisor .*?)(?:\s+#.*)?$", line)
        if m:
            out.append(m.group(1).strip())
    return out


def test_readme_has_examples() -> None:
    assert len(_examples()) >= 8


@pytest.mark.parametrize("command", _examples())
def test_readme_example_runs(command: str, tmp_path: Path) -> None:
    args = shlex.split(command)[1:]
    # files the example writes go to a temporary folder; files it reads are the repo's own
    args = [str(tmp_path / a) if a.endswith((".png", ".svg")) or (i and args[i - 1] in ("-o", "--output"))
            else a for i, a in enumerate(args)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=300)
    assert done.returncode == 0, f"{command}: {done.stderr[-500:]}"
    assert "Traceback" not in done.stderr
