"""Every command the README and docs/*.md show runs as written (offline, from the repo root) and exits 0; a command
shown on several pages runs once."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _examples(page: Path) -> list[str]:
    """Indented `advisor ...` lines of a page, comments dropped (the set-up commands are tested by CI)."""
    out = []
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^ {4}(advisor .*?)(?:\s+#.*)?$", line)
        if m:
            out.append(m.group(1).strip())
    return out


def _commands() -> dict[str, list[str]]:
    """Each distinct command, with the pages that show it (in page order)."""
    seen: dict[str, list[str]] = {}
    for page in PAGES:
        for command in _examples(page):
            seen.setdefault(command, []).append(page.relative_to(REPO).as_posix())
    return seen


COMMANDS = _commands()


def test_readme_has_examples() -> None:
    assert len(_examples(REPO / "README.md")) >= 8


def test_every_docs_page_with_commands_is_collected() -> None:
    # the pages that show commands are all run: none is left out by the pattern (a tab, a `$ ` prompt)
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        shown = re.findall(r"^(?: {4,}|\t+)\$?\s*advisor \S", text, flags=re.M)
        assert len(shown) == len(_examples(page)), f"{page.name}: an indented advisor line the test does not run"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_readme_example_runs(command: str, tmp_path: Path) -> None:
    args = shlex.split(command)[1:]
    # files the example writes go to a temporary folder; files it reads are the repo's own
    args = [str(tmp_path / a) if a.endswith((".png", ".svg")) or (i and args[i - 1] in ("-o", "--output"))
            else a for i, a in enumerate(args)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    done = subprocess.run([sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=300)
    assert done.returncode == 0, f"{command} ({', '.join(COMMANDS[command])}): {done.stderr[-500:]}"
    assert "Traceback" not in done.stderr
