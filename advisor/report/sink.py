"""The one output sink of every command: one JSON document on stdout (`--json`), CSV rows (`--csv`), or the human
rendering; warnings and notes on stderr. Commands hand their typed result here; nothing else writes to stdout.
Human text is escaped for the terminal (`advisor.text.printable`; rich renderings: `report/console.py`).

JSON is always valid JSON: pydantic models, numpy values and lists of them are turned into plain values first,
and a non-finite float (nan, inf: "not predicted", a division by a zero measurement) is written as `null`
(`json.dumps(..., allow_nan=False)` refuses anything that slipped through).

A document may hold a `Stream` (check's rows): a long list made while it is written, so 200k rows never sit in
memory as one string or one list of dicts; JSON writes it one compact element per line, each element through
`json.dumps`."""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from advisor.text import printable

T = TypeVar("T")


class Stream:
    """`n` elements made by `make()` (an iterator of JSON-able values, non-finite floats already None) when
    written; `progress(done)` every few thousand."""

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
    """`--json`: the document as JSON; else `render(doc)` (a function of `advisor/report`)."""
    if not json_out:
        render(doc)
    elif isinstance(doc, dict) and any(isinstance(v, Stream) for v in doc.values()):
        _write_streaming(doc)
    else:
        sys.stdout.write(dumps(doc) + "\n")


def dumps(doc: Any, indent: int | None = 2) -> str:
    """`doc` as JSON text: models and numpy values as plain values, non-finite floats as null."""
    return json.dumps(plain(doc), indent=indent, allow_nan=False)


def plain(obj: Any) -> Any:
    """JSON-able plain values: pydantic models dumped (mode="json"), numpy scalars and arrays as Python values,
    tuples as lists, non-finite floats as None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, Mapping):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if hasattr(obj, "model_dump"):
        return plain(obj.model_dump(mode="json"))
    import numpy as np

    if isinstance(obj, (np.generic, np.ndarray)):
        return plain(obj.tolist())
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _write_streaming(doc: dict[str, Any]) -> None:
    """A top-level object whose Stream values are written element by element (compact, one per line)."""
    out = sys.stdout
    out.write("{")
    for i, (key, value) in enumerate(doc.items()):
        out.write(("," if i else "") + f"\n  {json.dumps(key)}: ")
        if not isinstance(value, Stream):
            out.write(dumps(value).replace("\n", "\n  "))
            continue
        out.write("[")
        encode = _element_encoder()
        chunk: list[str] = []
        for j, item in enumerate(value):
            chunk.append(("," if j else "") + "\n    " + encode(item))
            if len(chunk) >= 1024:
                out.write("".join(chunk))
                chunk.clear()
        out.write("".join(chunk) + ("\n  ]" if len(value) else "]"))
    out.write("\n}\n")


def _element_encoder() -> Callable[[Any], str]:
    """What `json.dumps(element, allow_nan=False)` runs, made once for the whole stream instead of once per element
    (json.dumps builds a new encoder on every call with non-default arguments): CPython's C encoder, compact
    separators `, ` and `: `, ASCII-escaped strings, a non-finite float refused. No circular-reference check: the
    elements are trees made for the stream."""
    from json.encoder import (  # type: ignore[attr-defined]  # CPython's C encoder, untyped in typeshed
        c_make_encoder,
        encode_basestring_ascii,
    )

    if c_make_encoder is None:  # no C speedups: the pure-Python encoder, same text
        return json.JSONEncoder(allow_nan=False, check_circular=False).encode
    enc = c_make_encoder(None, _unserialisable, encode_basestring_ascii, None, ": ", ", ", False, False, False)
    return lambda element: "".join(enc(element, 0))


def _unserialisable(obj: Any) -> Any:
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def write_csv(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    """`--csv`: a header and one line per row (keys beyond `columns` ignored)."""
    w = csv.DictWriter(sys.stdout, fieldnames=list(columns), extrasaction="ignore")
    w.writeheader()
    for row in rows:
        w.writerow(row)


def line(text: str = "") -> None:
    """One line of human output on stdout, as it is (control characters escaped: `advisor.text.printable`)."""
    sys.stdout.write(printable(text) + "\n")


def warn(text: str) -> None:
    """A warning on stderr: `advisor: warning: TEXT` (one line, control characters escaped)."""
    sys.stderr.write(f"advisor: warning: {printable(text, lines=False)}\n")


def note(text: str) -> None:
    """A note on stderr: `advisor: TEXT` (e.g. a model that could not be used, when others could)."""
    sys.stderr.write(f"advisor: {printable(text, lines=False)}\n")
