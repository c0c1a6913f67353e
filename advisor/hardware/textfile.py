"""Read a small text input (tool output) or fail with one line: missing, empty or binary."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.errors import AdvisorError

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MAX_BYTES = 16 * 1024 * 1024


def read_tool_text(path: Path, what: str) -> str:
    """File text with ANSI colour codes removed; AdvisorError if unreadable, empty, huge or binary."""
    try:
        if not Path(path).is_file():  # a device (/dev/urandom) or pipe may never end
            what_it_is = "no such file" if not Path(path).exists() else "not a regular file"
            raise AdvisorError(f"{path}: {what_it_is}, expected {what}")
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as err:
        raise AdvisorError(f"{path}: cannot read ({err.strerror or err})") from None
    if not raw.strip():
        raise AdvisorError(f"{path}: empty file, expected {what}")
    if len(raw) > MAX_BYTES:
        raise AdvisorError(f"{path}: more than {MAX_BYTES:,} bytes is too large for {what}")
    if b"\x00" in raw:
        raise AdvisorError(f"{path}: binary file, expected {what}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AdvisorError(f"{path}: binary or non-UTF-8 file, expected {what}") from None
    return ANSI.sub("", text).replace("\r\n", "\n")
