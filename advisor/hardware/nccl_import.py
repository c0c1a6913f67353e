"""Parse nccl-tests text output (`all_reduce_perf`, `all_gather_perf`, ...) and fit collective terms.

Format (nccl-tests `src/common.cu`): `#` header lines (`# nThread 1 nGpus 8 ...`, `# Using devices`,
`#  Rank  0 Group  0 Pid ... device  0 [0x01] NAME`), a column header
`#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong` (out-of-place
then in-place), one row per size, then `# Avg bus bandwidth`. Older versions lack the `root` column;
the column header decides. Terms are fitted to the out-of-place time (what aiconfigurator stores too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from advisor.errors import AdvisorError
from advisor.hardware.fit import Fit, fit_collective
from advisor.hardware.nccl_infer import USED, Row, candidates
from advisor.hardware.textfile import read_tool_text

WHAT = "nccl-tests output (e.g. all_reduce_perf)"
TEST_OPS = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "alltoall": "alltoall",
    "sendrecv": "p2p",
}
OTHER_TESTS = ("broadcast", "reduce_perf", "gather_perf", "scatter_perf", "hypercube")


@dataclass
class NcclTable:
    """Rows of one nccl-tests run (sizes in bytes, times in us) and what the header said."""

    op: str | None
    gpus: int | None
    device: str | None
    sizes: list[float] = field(default_factory=list)
    times_oop_us: list[float] = field(default_factory=list)
    times_ip_us: list[float] = field(default_factory=list)
    busbw_gbps: list[float] = field(default_factory=list)
    skipped_rows: int = 0
    rows: list[Row] = field(default_factory=list)  # the cells that identify the collective (`nccl_infer`)


def _op_from(text: str, path: Path) -> str | None:
    """The op a "Collective test starting" line or the file name states."""
    m = re.search(r"Collective test starting:\s*(\w+?)_perf", text)
    names = [m.group(1)] if m else []
    names.append(path.name.lower())
    for name in names:
        for key, op in TEST_OPS.items():
            if key in name:
                return op
    return None


def _identity(toks: list[str], cols: list[str], size: float) -> Row:
    """The row's count, type, redop, root, algbw and busbw (first, out-of-place, columns) where present."""
    def cell(name: str) -> str | None:
        return toks[cols.index(name)] if name in cols else None

    def num(name: str) -> float | None:
        try:
            return float(cell(name) or "")
        except ValueError:
            return None

    root = num("root")
    return Row(size=size, count=num("count"), dtype=cell("type"), redop=cell("redop"),
               root=int(root) if root is not None else None, algbw=num("algbw"), busbw=num("busbw"))


def _gpus_from(text: str) -> int | None:
    ranks = re.findall(r"^#\s*Rank\s+\d+\s", text, flags=re.M)
    if ranks:
        return len(ranks)
    m = re.search(r"nThread\s+(\d+)\s+nGpus\s+(\d+)", text)
    return int(m.group(1)) * int(m.group(2)) if m else None


def _header(lines: list[str]) -> tuple[int, list[str]] | None:
    for i, ln in enumerate(lines):
        toks = ln.lstrip("#").split()
        if ln.startswith("#") and toks[:2] == ["size", "count"] and "time" in toks and "busbw" in toks:
            return i, toks
    return None


def _row(toks: list[str], cols: list[str]) -> tuple[float, float, float | None, float] | None:
    """(size, oop time, ip time, oop busbw) or None when the row is not a complete valid row."""
    if len(toks) != len(cols):
        return None
    t_idx = [i for i, c in enumerate(cols) if c == "time"]
    b_idx = cols.index("busbw")
    try:
        size, t_oop, bw = float(toks[0]), float(toks[t_idx[0]]), float(toks[b_idx])
        int(toks[1])
    except ValueError:
        return None
    try:  # in-place columns may read N/A (e.g. alltoall in some versions)
        t_ip: float | None = float(toks[t_idx[1]]) if len(t_idx) > 1 else None
    except ValueError:
        t_ip = None
    if size <= 0 or t_oop <= 0 or not np.isfinite(t_oop):
        return None
    return size, t_oop, t_ip, bw


def parse_nccl_tests(path: Path) -> NcclTable:
    """Read the table; partial tables keep their valid rows and count the rest in `skipped_rows`."""
    text = read_tool_text(path, WHAT)
    lines = text.splitlines()
    head = _header(lines)
    if head is None:
        hint = " (looks like another nccl-tests binary)" if any(k in text for k in OTHER_TESTS) else ""
        raise AdvisorError(f"{path}: not {WHAT}: no 'size count type ... time algbw busbw' header{hint}")
    start, cols = head
    dev = re.search(r"^#\s*Rank\s+0\s.*?device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$", text, flags=re.M)
    table = NcclTable(
        op=_op_from(text, Path(path)), gpus=_gpus_from(text), device=dev.group(1) if dev else None
    )
    for ln in lines[start + 1 :]:
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        row = _row(ln.split(), cols)
        if row is None:
            table.skipped_rows += 1
            continue
        table.sizes.append(row[0])
        table.rows.append(_identity(ln.split(), cols, row[0]))
        table.times_oop_us.append(row[1])
        table.times_ip_us.append(row[2] if row[2] is not None else float("nan"))
        table.busbw_gbps.append(row[3])
    if not table.sizes:
        raise AdvisorError(
            f"{path}: nccl-tests table has no complete rows "
            f"({table.skipped_rows} unreadable; truncated file?)"
        )
    return table


def fit_nccl_file(path: Path, op: str | None = None, gpus: int | None = None) -> tuple[NcclTable, Fit]:
    """Parse and fit. The GPU count is the file's (`--gpus` only where it says none, never against it); the op is
    `op`, else what a "Collective test starting" line says, else what the table shows (`nccl_infer`), with the
    file name choosing between look-alikes."""
    table = parse_nccl_tests(path)
    text = read_tool_text(path, WHAT)
    if gpus is not None and table.gpus is not None and gpus != table.gpus:
        raise AdvisorError(f"--gpus {gpus}: {path} was measured on {table.gpus} GPUs (its nGpus/Rank lines); a fit on "
                           f"{table.gpus} GPUs cannot stand for {gpus}")
    n = gpus or table.gpus
    if n is None or n < 2:
        raise AdvisorError(f"{path}: cannot tell the GPU count (no 'nGpus' or 'Rank' lines); pass --gpus N")
    op = op or _op_of(table, text, path, n)
    if op not in TEST_OPS.values():
        raise AdvisorError(f"--op {op}: expected one of {', '.join(sorted(set(TEST_OPS.values())))}")
    if len(table.sizes) < 2:
        raise AdvisorError(f"{path}: only {len(table.sizes)} valid row; need at least 2 sizes to fit")
    fit = fit_collective(op, n, np.array(table.sizes), np.array(table.times_oop_us))
    return table, fit


def _op_of(table: NcclTable, text: str, path: Path, n: int) -> str:
    """The collective the file measured, or a one-line error saying why it cannot tell (or that it is one the
    cost model does not use)."""
    ops = sorted(set(TEST_OPS.values()))
    named = re.search(r"Collective test starting:\s*(\w+?)_perf", text)
    if named:
        test = named.group(1)
        if not any(k in test for k in TEST_OPS):
            raise AdvisorError(f"{path}: {test}_perf is not a collective the cost model uses "
                               f"({', '.join(k + '_perf' for k in TEST_OPS)})")
        return str(_op_from(text, path))
    tests = candidates(table.rows, n)
    used = [USED[t] for t in tests if t in USED]
    if not used:
        raise AdvisorError(f"{path}: the table reads as {' or '.join(t + '_perf' for t in tests)} (redop, root, "
                           f"size per count, busbw/algbw), not a collective the cost model uses ({', '.join(ops)})")
    by_name = _op_from("", path)
    if len(used) == 1:
        return used[0]
    if by_name in used:
        return by_name
    raise AdvisorError(f"{path}: the table fits {' and '.join(used)} alike (redop, root, size per count, "
                       f"busbw/algbw); pass --op {' or --op '.join(used)}")


def summary(table: NcclTable, fit: Fit, path: Path) -> dict[str, object]:
    """JSON document of `hw import-nccl`."""
    return {
        "file": str(path),
        "op": fit.op,
        "gpus": fit.gpus,
        "device": table.device,
        "latency_us": fit.small_latency_us,
        "busbw_gbps": fit.large_busbw_gbps,
        "points": fit.points,
        "skipped_rows": table.skipped_rows,
        "max_measured_busbw_gbps": max(table.busbw_gbps),
        "terms": {k: v for k, v in fit.as_dict().items() if k not in ("op", "gpus", "points")},
    }


def _model_token(name: str) -> str | None:
    """The first word with a digit in a GPU name (H100, B200, 6000, A100-SXM4-80GB -> a100): the part that tells
    GPU models apart, whatever the vendor prefix and memory suffix."""
    for word in re.split(r"[^a-z0-9]+", name.lower()):
        if any(ch.isdigit() for ch in word):
            return word
    return None


def device_mismatch(device: str | None, gpu_name: str) -> str | None:
    """A warning when the file's device is another GPU model than the profile's, else None."""
    if not device:
        return None
    a, b = _model_token(device), _model_token(gpu_name)
    if a is None or b is None or a == b:
        return None
    return (f"the file was measured on {device}, the profile's GPU is {gpu_name}: its collective terms describe "
            "another GPU")
