"""Read aiconfigurator's measured comm table (`aiconfigurator_comm.csv`) and score profiles against it.

CSV facts (aiconfigurator `collector/network/collect_nccl.py`; tests/data/collectives/README.md):
NCCL rows are nccl-tests out-of-place times in ms with
`message_size` in elements (fp16 -> 2 bytes each, int8 -> 1); custom-allreduce rows are CUDA-graph
latencies with `message_size` in bf16 elements.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from advisor.hardware.comm import collective_time_us
from advisor.hardware.schema import HardwareProfile

OP_NAMES = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "alltoall": "alltoall",
}
DTYPE_BYTES = {"half": 2, "int8": 1, "bfloat16": 2}
CUSTOM_KERNELS = {"vllm": "vLLM_custom_graph", "sglang": "SGLang_CustomAllReduce_graph"}


@dataclass(frozen=True)
class CommRow:
    system: str
    op: str
    kernel: str
    dtype: str
    version: str
    gpus: int
    nbytes: float
    time_us: float


def read_aic_csv(path: Path) -> list[CommRow]:
    """All rows of the AIC comm CSV with sizes in bytes and times in microseconds."""
    rows: list[CommRow] = []
    with open(path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            dtype = r["nccl_dtype"] or r["allreduce_dtype"]
            if r["op_name"] not in OP_NAMES or dtype not in DTYPE_BYTES:
                continue
            rows.append(
                CommRow(
                    r["aic_system"],
                    OP_NAMES[r["op_name"]],
                    r["kernel_source"],
                    dtype,
                    r["version"],
                    int(r["num_gpus"]),
                    float(r["message_size"]) * DTYPE_BYTES[dtype],
                    float(r["latency"]) * 1e3,
                )
            )
    return rows


def nccl_series(rows: list[CommRow], system: str, op: str, gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, us) of the fp16 NCCL rows for one system/op/group size, all NCCL versions."""
    sel = [
        r
        for r in rows
        if r.system == system and r.op == op and r.kernel == "NCCL" and r.dtype == "half" and r.gpus == gpus
    ]
    return np.array([r.nbytes for r in sel]), np.array([r.time_us for r in sel])


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("+")[0].split(".")[:3] if x.isdigit())


def custom_series(
    rows: list[CommRow], system: str, gpus: int, engine: str = "vllm", max_bytes: float = float("inf")
) -> tuple[np.ndarray, np.ndarray, str]:
    """(bytes, us, version): newest engine version's CUDA-graph custom-allreduce rows below max_bytes."""
    sel = [r for r in rows if r.system == system and r.kernel == CUSTOM_KERNELS[engine] and r.gpus == gpus]
    if not sel:
        return np.array([]), np.array([]), ""
    newest = max((r.version for r in sel), key=_version_key)
    sel = [r for r in sel if r.version == newest and r.nbytes < max_bytes]
    return np.array([r.nbytes for r in sel]), np.array([r.time_us for r in sel]), newest


def systems_and_sizes(rows: list[CommRow], op: str = "allreduce") -> dict[str, list[int]]:
    """Measured NCCL group sizes per AIC system for one op."""
    out: dict[str, set[int]] = {}
    for r in rows:
        if r.op == op and r.kernel == "NCCL":
            out.setdefault(r.system, set()).add(r.gpus)
    return {k: sorted(v) for k, v in sorted(out.items())}


def score(hw: HardwareProfile, rows: list[CommRow], system: str, op: str, gpus: int) -> dict[str, float]:
    """Median/p90 |error| % of the profile's raw-NCCL prediction over every measured fp16 size."""
    S, t = nccl_series(rows, system, op, gpus)
    pred = collective_time_us(hw, op, S, gpus, engine="nccl", gpus=list(range(gpus)))
    err = np.abs(pred / t - 1.0) * 100.0
    return {
        "points": int(S.size),
        "median_abs_err_pct": float(np.median(err)),
        "p90_abs_err_pct": float(np.percentile(err, 90)),
    }
