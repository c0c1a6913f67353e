"""Fit and check the NCCL model of one NVSwitch NVLink domain (`advisor/hardware/nvswitch.py`).

    python -m scripts.nvswitch_fit            # the checks, as a markdown table
    python -m scripts.nvswitch_fit --write    # refit advisor/hardware/nvswitch_params.json, then the checks

Data: the measured NCCL tables (`tests/data/kernels/<gpu>/nccl.csv.gz`, nccl-tests out-of-place, NCCL 2.29.2, fp16
rows). The NVLink5 parameters are fitted (least squares on log time) to the HGX nodes, B200 and B300 at 2, 4 and 8
GPUs: one parameter set for both, the generation's. Checks, none of them fitted on: the NVL72 trays (GB200, GB300 at
2 and 4 GPUs, held out), and the 8-GPU nodes predicted by a fit on their 2- and 4-GPU rows only (a group larger than
any the fit saw, as a TP8 over two trays is).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import sys
from functools import cache
from pathlib import Path

import numpy as np

from advisor.hardware.nvswitch import PARAMS, PROTOCOLS, nvswitch_us

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "tests" / "data" / "kernels"
OPS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
       "alltoall": "alltoall"}
FIT_GPUS = ("b200-sxm", "b300-sxm")  # HGX nodes, NVLink5 + NVSwitch, 8 GPUs
HELD_OUT = ("gb200", "gb300")  # NVL72 trays of the same NVLink5 domain, 4 GPUs
LINK_GBPS = 900.0  # NVLink5 per GPU per direction: the profiles' nvlink p2p_bw_gbps (b200-sxm, b300-sxm, gb200, gb300)
Key = tuple[str, str, int]  # gpu, op, GPUs


@cache
def table(gpu: str) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """(op, GPUs) -> (bytes, us) of the GPU's fp16 NCCL rows."""
    out: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with gzip.open(KERNELS / gpu / "nccl.csv.gz", "rt", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            if r["nccl_dtype"] == "half" and r["op_name"] in OPS:
                out.setdefault((OPS[r["op_name"]], int(r["num_gpus"])), []).append(
                    (2.0 * int(r["message_size"]), 1e3 * float(r["latency_ms"])))
    return {k: tuple(np.array(c) for c in zip(*sorted(v), strict=True)) for k, v in out.items()}  # type: ignore


def keys(gpus: tuple[str, ...], sizes: tuple[int, ...] | None = None) -> list[Key]:
    return [(g, op, n) for g in gpus for op, n in sorted(table(g)) if sizes is None or n in sizes]


# NCCL's latency per NVLink ring step with the Simple protocol (tuning.cc hwLatencies[NVLINK][Ring][Simple],
# NVIDIA/nccl v2.30.7): held, not fitted, as the tables cannot separate it from the base (Simple only wins for
# messages whose time is bytes; any base + steps x step of the same sum fits them alike)
SIMPLE_RING_STEP_US = 3.4


def unpack(x: np.ndarray) -> dict:
    """Parameter vector -> the generation's tables (ring and alltoall, each protocol base, step, share; the ring's
    Simple step is NCCL's)."""
    it = iter(float(v) for v in x)
    out = {kind: {p: {"base_us": next(it), "step_us": next(it) if (kind, p) != ("ring", "simple") else
                      SIMPLE_RING_STEP_US, "link_share": next(it)} for p in PROTOCOLS} for kind in ("ring", "alltoall")}
    return out


def log_errors(gen: dict, ks: list[Key]) -> np.ndarray:
    """log(model / measured) over every row of `ks`."""
    out = []
    for g, op, n in ks:
        S, t = table(g)[op, n]
        out.append(np.log(nvswitch_us(op, S, n, gen, LINK_GBPS) / t))
    return np.concatenate(out)


def fit(ks: list[Key]) -> dict:
    """Least squares on log time, started from NCCL's own constants (tuning.cc: LL base 6.6 us, 0.6 us per NVLink
    step; Simple base 8.4 us)."""
    from scipy.optimize import least_squares

    x0 = [6.6, 0.6, 0.3, 8.4, 0.7, 6.6, 0.6, 0.3, 8.4, 3.4, 0.7]
    lo = [0.0, 0.0, 0.01, 0.0, 0.01, 0.0, 0.0, 0.01, 0.0, 0.0, 0.01]
    hi = [60.0, 20.0, 1.0, 60.0, 1.0, 60.0, 20.0, 1.0, 60.0, 20.0, 1.0]
    res = least_squares(lambda x: log_errors(unpack(x), ks), x0, bounds=(lo, hi))
    return {k: {p: {n: round(v, 4) for n, v in d.items()} for p, d in t.items()} for k, t in unpack(res.x).items()}


def median_abs_pct(gen: dict, ks: list[Key]) -> float:
    return float(100 * np.median(np.abs(np.expm1(log_errors(gen, ks)))))


def floor_pct(gen: dict, key: Key) -> float:
    """Signed error of the smallest message (the latency floor)."""
    g, op, n = key
    S, t = table(g)[op, n]
    return float(100 * (nvswitch_us(op, S[:1], n, gen, LINK_GBPS)[0] / t[0] - 1))


def checks(gen: dict) -> list[dict]:
    """Per (GPU, op, GPUs) of the held-out trays and of the 8-GPU nodes (predicted by a fit without them): median
    |error| over the sizes and the floor's signed error."""
    small = fit(keys(FIT_GPUS, (2, 4)))
    rows = [{"gpu": g, "op": op, "gpus": n, "how": "held out (tray)", "median_abs_pct": median_abs_pct(gen, [k]),
             "floor_pct": floor_pct(gen, k)} for k in keys(HELD_OUT) for g, op, n in [k]]
    rows += [{"gpu": g, "op": op, "gpus": n, "how": "fit on 2 and 4 GPUs", "median_abs_pct": median_abs_pct(small, [k]),
              "floor_pct": floor_pct(small, k)} for k in keys(FIT_GPUS, (8,)) for g, op, n in [k]]
    return rows


def params_doc() -> dict:
    """The shipped parameters (`nvswitch_params.json`)."""
    return json.loads(PARAMS.read_text(encoding="utf-8"))


def report(doc: dict) -> str:
    gen = doc["generations"]["nvlink5"]
    lines = [f"In sample (B200, B300 at 2, 4, 8 GPUs): median |error| {gen['in_sample_median_abs_pct']:.1f}%.", "",
             "| GPU | op | GPUs | check | median abs error | floor error |", "|---|---|---:|---|---:|---:|"]
    lines += [f"| {r['gpu']} | {r['op']} | {r['gpus']} | {r['how']} | {r['median_abs_pct']:.1f}% | "
              f"{r['floor_pct']:+.1f}% |" for r in checks(gen)]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"refit and write {PARAMS.relative_to(REPO)}")
    args = ap.parse_args()
    if args.write:
        ks = keys(FIT_GPUS)
        gen = {"link_gbps": LINK_GBPS, "fitted_on": list(FIT_GPUS), **fit(ks)}
        gen["in_sample_median_abs_pct"] = round(median_abs_pct(gen, ks), 1)
        doc = {"source": "NCCL 2.29.2 nccl-tests tables of aiconfigurator (ai-dynamo/aiconfigurator@095f58a5, "
                         "tests/data/kernels/<gpu>/nccl.csv.gz), fp16 rows; by scripts/nvswitch_fit.py",
               "generations": {"nvlink5": gen}}
        PARAMS.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    try:
        print(report(params_doc()))
    except OSError as err:
        print(f"nvswitch_fit: {PARAMS}: {err.strerror} (run with --write)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
