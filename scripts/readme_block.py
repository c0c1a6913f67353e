"""Replace a generated block of the README (between `<!-- NAME:start -->` and `<!-- NAME:end -->`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_block(readme: Path, name: str, body: str) -> None:
    """Write `body` between the NAME markers, atomically; nothing else in the file changes."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = readme.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{readme}: markers {start} / {end} not found")
    pre, rest = text.split(start, 1)
    _, post = rest.split(end, 1)
    fd, tmp = tempfile.mkstemp(dir=readme.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(pre + start + "\n" + body.rstrip("\n") + "\n" + end + post)
    os.replace(tmp, readme)
