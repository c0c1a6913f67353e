"""A progress bar on stderr through `rich.progress`: only when stderr is a terminal (one that can move the cursor),
only once the work has run for a second (most commands finish sooner), and cleared when it closes (transient).
rich is imported when the bar is first shown."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

DELAY_S = 1.0  # quiet below this: most commands finish sooner
EVERY_S = 0.1  # redraw at most this often


class Progress:
    """`update(stage, done, total)` as the work goes; `close()` (or leaving the `with` block) clears the bar."""

    def __init__(self, label: str, stream: TextIO | None = None, delay_s: float = DELAY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.stream, self.delay_s, self.clock = label, stream or sys.stderr, delay_s, clock
        isatty = getattr(self.stream, "isatty", None)
        # a terminal that cannot move the cursor (TERM=dumb, as rich's Console.is_dumb_terminal) gets no bar
        self.on = bool(isatty and isatty()) and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")
        self.start = clock()
        self.last = -1.0
        self._bar: Any = None  # rich.progress.Progress while shown
        self._task: Any = None

    def update(self, stage: str, done: int, total: int | None = None) -> None:
        """`stage`: what is being done; `done` of `total` items (total None: a count only)."""
        if not self.on:
            return
        now = self.clock()
        if now - self.start < self.delay_s or now - self.last < EVERY_S:
            return
        self.last = now
        if self._bar is None:
            self._show()
        self._bar.update(self._task, description=f"{self.label}: {stage}", completed=done, total=total)
        if self._bar.live.is_started:
            self._bar.refresh()
        else:
            self._bar.start()  # draws it

    def _show(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        # no auto-refresh thread (redrawn in update) and stdout left alone: rows may be streaming there
        self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(file=self.stream), transient=True,
                                 auto_refresh=False, redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task(self.label, total=None)

    def close(self) -> None:
        """Clear the bar (nothing to clear when it never showed)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
