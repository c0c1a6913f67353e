"""A one-line progress bar on stderr: only on a terminal, and only once the work has run for a second."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

DELAY_S = 1.0  # quiet below this: most commands finish sooner
EVERY_S = 0.1  # redraw at most this often
WIDTH = 30


class Progress:
    def __init__(self, label: str, stream: TextIO | None = None, delay_s: float = DELAY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.stream, self.delay_s, self.clock = label, stream or sys.stderr, delay_s, clock
        isatty = getattr(self.stream, "isatty", None)
        self.on = bool(isatty and isatty())
        self.start = clock()
        self.last = -1.0
        self.shown = False

    def update(self, stage: str, done: int, total: int | None = None) -> None:
        """`stage`: what is being done; `done` of `total` items (total None: a count only)."""
        if not self.on:
            return
        now = self.clock()
        if now - self.start < self.delay_s or now - self.last < EVERY_S:
            return
        self.last, self.shown = now, True
        if total:
            filled = min(WIDTH, int(WIDTH * done / total))
            text = f"{self.label}: {stage} [{'#' * filled}{'.' * (WIDTH - filled)}] {done:,}/{total:,}"
        else:
            text = f"{self.label}: {stage} {done:,}"
        self.stream.write(f"\r{text}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        """Clear the bar's line (nothing to clear when it never showed)."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
