"""Which collective an nccl-tests table measured, read from the table itself.

nccl-tests prints, per row, `size` = max(send, receive) bytes of one rank and `count` = the collective's element
count parameter (`src/common.cu: TimeTest` prints `max(sendBytes, expectedBytes)` and `nbytes / wordSize(type)`;
each test's `GetCollByteCount` sets them), the reduction (`redop`: none for data movement), the `root` (-1 for
rootless collectives) and algbw/busbw, where busbw = algbw x a per-collective factor (`src/*.cu: GetBw`). So:

| test            | redop    | root | size / (count x type size) | busbw / algbw |
|-----------------|----------|------|----------------------------|---------------|
| all_reduce      | a reduce | -1   | 1                          | 2(n-1)/n      |
| reduce_scatter  | a reduce | -1   | n                          | (n-1)/n       |
| all_gather      | none     | -1   | n                          | (n-1)/n       |
| alltoall        | none     | -1   | n                          | (n-1)/n       |
| sendrecv        | a reduce | -1   | 1                          | 1             |
| broadcast       | none     | >= 0 | 1                          | 1             |
| reduce          | a reduce | >= 0 | 1                          | 1             |
| gather, scatter | none     | >= 0 | n                          | (n-1)/n       |

all_gather and alltoall look alike, and at n = 2 so do all_reduce and sendrecv: then the file name or `--op`
decides. Older nccl-tests print no `root` column (and some counted `count` differently): a signal the table
lacks, or that no candidate matches, is left out rather than trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TYPE_BYTES = {"int8": 1, "char": 1, "uint8": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
              "half": 2, "float16": 2, "bfloat16": 2, "bf16": 2, "int32": 4, "int": 4, "uint32": 4, "float": 4,
              "float32": 4, "int64": 8, "uint64": 8, "double": 8, "float64": 8}
# the cost model's name for each test it uses (others are recognised, to say they are not used)
USED = {"all_reduce": "allreduce", "reduce_scatter": "reducescatter", "all_gather": "allgather",
        "alltoall": "alltoall", "sendrecv": "p2p"}


@dataclass(frozen=True)
class Signature:
    test: str
    reduces: bool
    rooted: bool
    size_per_rank: bool  # size = count x type size x n (else x 1)
    bus: str  # "2(n-1)/n" | "(n-1)/n" | "1"


SIGNATURES = (
    Signature("all_reduce", True, False, False, "2(n-1)/n"),
    Signature("reduce_scatter", True, False, True, "(n-1)/n"),
    Signature("all_gather", False, False, True, "(n-1)/n"),
    Signature("alltoall", False, False, True, "(n-1)/n"),
    Signature("sendrecv", True, False, False, "1"),
    Signature("broadcast", False, True, False, "1"),
    Signature("reduce", True, True, False, "1"),
    Signature("gather", False, True, True, "(n-1)/n"),
    Signature("scatter", False, True, True, "(n-1)/n"),
)


@dataclass(frozen=True)
class Row:
    """The cells of one table row that identify the collective (None where the table has no such column)."""

    size: float
    count: float | None
    dtype: str | None
    redop: str | None
    root: int | None
    algbw: float | None
    busbw: float | None


def _bus(kind: str, n: int) -> float:
    return {"2(n-1)/n": 2 * (n - 1) / n, "(n-1)/n": (n - 1) / n, "1": 1.0}[kind]


def _close(a: float, b: float, tol: float = 0.05) -> bool:
    return abs(a - b) <= tol * max(abs(b), 1e-9)


def _filters(rows: Sequence[Row], n: int) -> list[tuple[str, object]]:
    """(signal, value) pairs the table offers: redop, root, bus factor, size ratio (applied in that order)."""
    out: list[tuple[str, object]] = []
    redops = {r.redop for r in rows if r.redop}
    if len(redops) == 1:
        out.append(("reduces", redops.pop().lower() != "none"))
    roots = {r.root for r in rows if r.root is not None}
    if len(roots) == 1:
        out.append(("rooted", roots.pop() >= 0))
    best = max((r for r in rows if r.algbw and r.busbw), key=lambda r: r.algbw or 0, default=None)
    if best is not None and best.algbw is not None and best.busbw is not None and best.algbw >= 0.1:
        out.append(("bus", best.busbw / best.algbw))  # computed by nccl-tests itself: before the size ratio
    ratios = [r.size / (r.count * TYPE_BYTES[r.dtype]) for r in rows
              if r.count and r.dtype in TYPE_BYTES and r.size > 0]
    if ratios:
        mid = sorted(ratios)[len(ratios) // 2]
        if n > 1 and _close(mid, n, 0.02):
            out.append(("size_per_rank", True))
        elif _close(mid, 1, 0.02):
            out.append(("size_per_rank", False))
    return out


def candidates(rows: Sequence[Row], n: int) -> list[str]:
    """nccl-tests names the table is consistent with (every signal it offers; a signal matching nothing is
    ignored, as in older formats)."""
    left = list(SIGNATURES)
    for signal, value in _filters(rows, n):
        if signal == "bus":
            assert isinstance(value, float)
            keep = [s for s in left if _close(value, _bus(s.bus, n))]
        else:
            keep = [s for s in left if getattr(s, signal) == value]
        if keep:
            left = keep
    return [s.test for s in left]
