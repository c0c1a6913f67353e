"""Writing a figure: PNG or SVG by the file's extension, atomically (`advisor/files.py`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.files import atomic_output

__all__ = ["save"]


def save(fig: Any, path: str | os.PathLike[str]) -> None:
    """Write PNG or SVG (by extension) atomically (advisor.files)."""
    target = Path(path)
    fmt = target.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise AdvisorError(f"--plot: {target}: give a .png or .svg file name")
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise AdvisorError(f"--plot: {target}: directory {directory} does not exist")
    with atomic_output(target, "wb") as fh:
        fig.savefig(fh, format=fmt)
