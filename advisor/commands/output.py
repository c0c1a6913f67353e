"""One output sink for every command: one JSON document on stdout, or the human rendering.

A document may hold a `Stream` (check's rows): a long list made while it is written, so 200k rows never sit in
memory as one string or one list of dicts; JSON writes it one compact element per line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class RawJSON(str):
    """Text that is already one JSON value (a Stream element encoded by its maker): written as it is."""


class Stream:
    """`n` elements made by `make()` (an iterator) when written; `progress(done)` every few thousand."""

    def __init__(self, n: int, make: Callable[[], Iterator[Any]],
                 progress: Callable[[int], None] | None = None) -> None:
        self.n, self.make, self.progress = n, make, progress

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Any]:
        for done, item in enumerate(self.make(), start=1):
            if self.progress is not None and not done % 4096:
                self.progress(done)
            yield item


def emit(doc: T, json_out: bool, render: Callable[[T], None]) -> None:
    """`--json`: the document (pydantic models, numpy values and lists of them serialised); else `render(doc)`."""
    if not json_out:
        render(doc)
    elif isinstance(doc, dict) and any(isinstance(v, Stream) for v in doc.values()):
        _write_streaming(doc)
    else:
        sys.stdout.write(json.dumps(doc, indent=2, default=_default) + "\n")


def _write_streaming(doc: dict[str, Any]) -> None:
    """A top-level object whose Stream values are written element by element (compact, one per line)."""
    out = sys.stdout
    out.write("{")
    for i, (key, value) in enumerate(doc.items()):
        out.write(("," if i else "") + f"\n  {json.dumps(key)}: ")
        if not isinstance(value, Stream):
            out.write(json.dumps(value, indent=2, default=_default).replace("\n", "\n  "))
            continue
        out.write("[")
        chunk: list[str] = []
        for j, item in enumerate(value):
            text = item if isinstance(item, RawJSON) else json.dumps(item, default=_default)
            chunk.append(("," if j else "") + "\n    " + text)
            if len(chunk) >= 1024:
                out.write("".join(chunk))
                chunk.clear()
        out.write("".join(chunk) + ("\n  ]" if len(value) else "]"))
    out.write("\n}\n")


def _default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
