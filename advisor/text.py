"""Words for numbers, shared by the decisions (a plan's `why` sentence) and the report (tables): below both, so
that `decide` never imports `report`; and text made safe for a terminal."""

from __future__ import annotations

import re


def plural(n: int, word: str) -> str:
    """`1 GPU`, `8 GPUs`, `1,024 users`."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


# What a terminal acts on instead of showing: the C0 controls (ESC starts colour, title and screen-clearing
# sequences, BEL, backspace, carriage return), DEL, the C1 controls (U+0080-U+009F; U+009B is a one-character CSI),
# and the bidirectional overrides and isolates that reorder what is shown (U+202A-U+202E, U+2066-U+2069).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: str, lines: bool = True) -> str:
    """`text` with every control character a terminal would act on written as its escape (`\\x1b`, `\\x07`,
    `\\u202e`), so that text read from a file or typed as an argument shows as it is and cannot move the cursor,
    clear the screen or retitle the window. `lines=False`: newlines and tabs too (one line per record)."""
    pattern = _CONTROL if lines else _CONTROL_OR_LINE
    return pattern.sub(_escaped, text) if pattern.search(text) else text
