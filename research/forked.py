"""`fork_map`: a function over independent items in forked processes, one per CPU. The held-out fits of the
accuracy scripts are each independent and take minutes; forking lets the function be a closure over the rows
(nothing but the items and the results is pickled)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_TASK: Callable[[Any], Any] | None = None  # read by the forked workers


def fork_map(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None) -> list[R]:
    """[fn(x) for x in items], in that order, on `workers` forked processes (default: one per CPU; 1: here)."""
    n = min(workers or os.cpu_count() or 1, len(items))
    if n <= 1:
        return [fn(x) for x in items]
    global _TASK
    _TASK = fn
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            return pool.map(_call, items, chunksize=1)
    finally:
        _TASK = None


def _call(x: Any) -> Any:
    assert _TASK is not None
    return _TASK(x)
