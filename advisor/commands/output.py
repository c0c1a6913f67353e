"""One output sink for every command: one JSON document on stdout, or the human rendering."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def emit(doc: T, json_out: bool, render: Callable[[T], None]) -> None:
    """`--json`: the document (pydantic models, numpy values and lists of them serialised); else `render(doc)`."""
    if json_out:
        sys.stdout.write(json.dumps(doc, indent=2, default=_default) + "\n")
    else:
        render(doc)


def _default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
