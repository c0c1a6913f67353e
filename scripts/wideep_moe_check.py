"""TensorRT-LLM's wide-EP MoE compute tables against the advisor's MoE model of one EP rank (no refit).

    python -m scripts.wideep_moe_check                      # print the error table (tests/data/kernels/<gpu>/)
    python -m scripts.wideep_moe_check --update [FILE]      # also replace the wideep-moe block of docs/accuracy.md
    python -m scripts.wideep_moe_check --sample KERNELS_DIR # redraw the samples from the full tables

A row (aiconfigurator `collector/trtllm/collect_wideep_moe_compute.py`, accurate mode) times rank 0 of an EP group
of `moe_ep_size` ranks (DP = EP): the router on its DP share, input quantization and the CUTLASS grouped GEMMs for
the `rank0_num_tokens` tokens routed to it out of `num_tokens` (the collector's `power_law_logits_v3` swaps the
busiest rank's experts onto rank 0, so rank 0 is the busiest). The advisor prices the same layer with
`cost/step.py: _moe` on the Features `cost/features.py: _moe` builds for it: every DP rank's tokens (`num_tokens`),
E = `num_slots` experts over EP = `moe_ep_size` ranks, its busiest rank's (token, expert) pairs from EP Poisson loads
(`step.busiest_rank_pairs`), touched experts from uniform routing (`step.touched_experts`), the shipped kernel
parameters of the format on that GPU (`kernels.moe_params`) and the spec-sheet bandwidth the kernel fit used.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
from dataclasses import dataclass, fields
from pathlib import Path
from unittest import mock

import numpy as np

from advisor.arch.formats import bytes_per_param, compute_dtype
from advisor.cost import kernels, step
from advisor.cost.collectives import SLOTS
from advisor.cost.features import Features
from advisor.hardware import load_profile
from scripts.readme_block import home, replace_block

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "kernels"
TABLE = "wideep_moe.csv.gz"
GPUS = ("h100-sxm", "b200-sxm", "b300-sxm", "gb200", "gb300", "rtx-pro-6000-server")
SHARE, SEED = 0.6, 20260  # the same share of every GPU's table (1,361 of 2,268 rows; 324 of 540 on the RTX PRO 6000)
FORMAT = {"nvfp4": "nvfp4", "fp8_block": "fp8-block"}  # the table's moe_dtype -> the advisor's storage format
MATS = 3  # gated experts (DeepSeek-V3 shapes: w1, w3, w2; the collector's `w3_w1_weight` and `w2_weight`)
BANDS = ((2, 8), (16, 32), (64, 256))


def sample(src: Path, out: Path = DATA) -> dict[str, int]:
    """Write SHARE of each GPU's `src/<gpu>/wideep_moe.csv.gz` (seeded, rows in table order, every column as
    written) to `out/<gpu>/`; returns rows kept per GPU."""
    kept = {}
    for i, gpu in enumerate(GPUS):
        with gzip.open(src / gpu / TABLE, "rt", newline="") as f:
            rows = list(csv.reader(f))
        head, body = rows[0], rows[1:]
        pick = np.sort(np.random.default_rng(SEED + i).choice(len(body), round(SHARE * len(body)), replace=False))
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([head, *(body[j] for j in pick)])
        (out / gpu).mkdir(parents=True, exist_ok=True)
        with open(out / gpu / TABLE, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(text.getvalue().encode())  # mtime 0: the same rows give the same bytes
        kept[gpu] = len(pick)
    return kept


def read(gpu: str, root: Path = DATA) -> list[dict[str, str]]:
    """The sampled rows of one GPU."""
    with gzip.open(root / gpu / TABLE, "rt", newline="") as f:
        return list(csv.DictReader(f))


def features(rows: list[dict[str, str]], gpu: str) -> Features:
    """One Features row per table row holding one MoE layer (`features._moe`'s fields; everything else 0)."""
    hw = load_profile(gpu)
    fp4 = "fp4" in hw.gpu.native_formats
    n = len(rows)
    col = {k: np.array([float(r[k]) for r in rows]) for k in
           ("num_slots", "topk", "moe_ep_size", "hidden_size", "inter_size", "moe_tp_size")}
    out = {f.name: np.zeros((n, len(SLOTS))) if f.name.startswith("coll_") else np.zeros(n) for f in fields(Features)}
    fmt = {FORMAT[r["moe_dtype"]] for r in rows}
    assert len(fmt) == 1, fmt  # one format per GPU table
    f = fmt.pop()
    k = kernels.moe_params(f, fp4, hw.gpu.sm or "")
    peak = hw.gpu.dense_flops_per_s("fp4" if f == "nvfp4" and fp4 else compute_dtype(f))
    out.update(moe_layers=np.ones(n), experts=col["num_slots"], topk=col["topk"], ep=col["moe_ep_size"],
               dp=col["moe_ep_size"], moe_hidden=col["hidden_size"], moe_inter=col["inter_size"] / col["moe_tp_size"],
               moe_mats=np.full(n, float(MATS)), moe_b_w=np.full(n, bytes_per_param(f)), moe_peak=np.full(n, peak),
               moe_t0_us=np.full(n, k["t0_us"]), moe_e_bw=np.full(n, k["e_bw"]), moe_e_f=np.full(n, k["e_f"]),
               moe_kappa=np.full(n, k["kappa_ns_per_B"]), moe_fpc=np.ones(n), moe_mma=np.ones(n))
    return Features(**out)


def predict_ms(rows: list[dict[str, str]], gpu: str, pairs: np.ndarray | None = None) -> np.ndarray:
    """The advisor's time of the rows' MoE layer on the busiest EP rank (`step._moe`: memory + compute excess +
    fixed), ms; tokens = every DP rank's (`num_tokens`), as `step._per_batch` passes them. `pairs`: the busiest
    rank's (token, expert) pairs to use instead of `step.busiest_rank_pairs` (the routing, nothing else, swapped)."""
    F = features(rows, gpu)
    tokens = np.array([float(r["num_tokens"]) for r in rows])
    bw = load_profile(gpu).gpu.mem_bw_bytes_per_s
    if pairs is None:
        w, c, fixed_us = step._moe(F, bw, tokens)
    else:
        with mock.patch.object(step, "busiest_rank_pairs", lambda topk, ep, t: pairs):
            w, c, fixed_us = step._moe(F, bw, tokens)
    return (w + c + fixed_us * 1e-6) * 1e3


def uniform_rank_tokens(tokens: np.ndarray, topk: np.ndarray, ep: np.ndarray) -> np.ndarray:
    """Tokens with at least one of their k experts on a given rank when routing is uniform: T (1 - (1 - 1/EP)^k)."""
    return tokens * (1 - (1 - 1 / ep) ** topk)


def table_pairs(rows: list[dict[str, str]]) -> np.ndarray:
    """Rank 0's (token, expert) pairs estimated from the table's routing: its tokens (`rank0_num_tokens`) times the
    pairs per token a rank holds under uniform routing, (T k / EP) / uniform_rank_tokens (the collector does not
    log the pairs)."""
    T, k, ep, r0 = (np.array([float(r[c]) for r in rows]) for c in
                    ("num_tokens", "topk", "moe_ep_size", "rank0_num_tokens"))
    return r0 * (T * k / ep) / uniform_rank_tokens(T, k, ep)


@dataclass(frozen=True)
class Scored:
    """One sampled row against the advisor: errors in % (predicted / measured - 1), latencies in us."""

    gpu: str
    fmt: str
    ep: int
    dist: str
    tokens: float
    meas_us: float
    pred_us: float
    err: float
    err_routed: float  # with the busiest rank's pairs from the table's routing (`table_pairs`)
    skew: float  # rank-0 tokens over uniform routing's tokens on one rank
    t0_us: float

    @property
    def eplb(self) -> bool:
        return self.dist.endswith("_eplb")


def scored() -> list[Scored]:
    """Every sampled row with its prediction, errors and routing skew."""
    out = []
    for gpu in GPUS:
        rows = read(gpu)
        pred, routed = predict_ms(rows, gpu), predict_ms(rows, gpu, table_pairs(rows))
        t0 = float(features(rows[:1], gpu).moe_t0_us[0])
        T, k, ep, r0, meas = (np.array([float(r[c]) for r in rows]) for c in
                              ("num_tokens", "topk", "moe_ep_size", "rank0_num_tokens", "latency_ms"))
        skew = r0 / uniform_rank_tokens(T, k, ep)
        out += [Scored(gpu, r["moe_dtype"], int(ep[i]), r["distribution"], T[i], meas[i] * 1e3, pred[i] * 1e3,
                       (pred[i] / meas[i] - 1) * 100, (routed[i] / meas[i] - 1) * 100, skew[i], t0)
                for i, r in enumerate(rows)]
    return out


def _line(label: str, rows: list[Scored]) -> str:
    err, routed = np.array([r.err for r in rows]), np.array([r.err_routed for r in rows])
    skew = np.median([r.skew for r in rows])
    return (f"| {label} | {err.size} | {np.median(np.abs(err)):.1f}% | {np.median(err):+.1f}% | {skew:.2f} | "
            f"{np.median(np.abs(routed)):.1f}% | {np.median(routed):+.1f}% |")


def table(rows: list[Scored]) -> str:
    """Median |error| and signed median error per GPU, format, EP band, routing distribution, EPLB and tokens."""
    big = [r for r in rows if r.tokens >= 2048]
    groups = [("all rows", rows)]
    groups += [(f"GPU `{g}`", [r for r in rows if r.gpu == g]) for g in GPUS]
    groups += [(f"format `{f}`", [r for r in rows if r.fmt == f]) for f in sorted({r.fmt for r in rows})]
    groups += [(f"EP {lo}-{hi}", [r for r in rows if lo <= r.ep <= hi]) for lo, hi in BANDS]
    groups += [(f"`{d}`", [r for r in rows if r.dist == d]) for d in sorted({r.dist for r in rows})]
    groups += [(f"EPLB {'on' if on else 'off'}", [r for r in rows if r.eplb is on]) for on in (False, True)]
    groups += [(f"tokens {lo}-{hi}", [r for r in rows if lo <= r.tokens <= hi])
               for lo, hi in ((1, 64), (128, 1024), (2048, 16384))]
    groups += [(f"EP {lo}-{hi}, tokens 2048-16384", [r for r in big if lo <= r.ep <= hi]) for lo, hi in BANDS]
    head = ["| rows | n | median \\|error\\| | signed median | rank-0 tokens / uniform | "
            "with the table's rank-0 load: median \\|error\\| | signed |", "|---|---:|---:|---:|---:|---:|---:|"]
    return "\n".join([*head, *(_line(label, g) for label, g in groups if g)])


def floor_table(rows: list[Scored]) -> str:
    """Per GPU, the lightest rows (EP >= 64, at most 64 tokens: a few experts, a few pairs): measured and predicted
    medians, and the shipped fixed latency t0 of the format's group (`kernels.moe_params`)."""
    lines = ["| GPU | rows | measured median | predicted median | advisor t0 |", "|---|---:|---:|---:|---:|"]
    for gpu in GPUS:
        light = [r for r in rows if r.gpu == gpu and r.ep >= 64 and r.tokens <= 64]
        if light:
            meas, pred = np.median([r.meas_us for r in light]), np.median([r.pred_us for r in light])
            lines.append(f"| `{gpu}` | {len(light)} | {meas:.1f} us | {pred:.1f} us | {light[0].t0_us:.1f} us |")
    return "\n".join(lines)


def block(rows: list[Scored]) -> str:
    """The wideep-moe block: what was compared, the error table, the fixed-latency table."""
    intro = (
        "TensorRT-LLM 1.3.0rc10 wide-EP MoE compute of the busiest EP rank (router on its DP share, input "
        "quantization, CUTLASS grouped GEMMs; no all-to-all), DeepSeek-V3-like shapes, against the advisor's MoE "
        "layer on the busiest rank (`cost/step.py: _moe`, shipped `kernel_params.json`, fitted on vLLM's fused MoE "
        f"only). Sample: `tests/data/kernels/<gpu>/{TABLE}`, {len(rows)} rows. Written by "
        "`scripts/wideep_moe_check.py`; error = predicted / measured - 1. The fifth column is the table's tokens "
        "on rank 0 over what uniform routing puts on one rank, T (1 - (1 - 1/EP)^k): the power-law routing's skew, "
        "which the advisor's Poisson busiest rank does not carry; the last two redo the prediction with rank 0's "
        "pairs from that skew (`table_pairs`), the routing and nothing else changed."
    )
    floor = ("The lightest rows, where the fixed latency is all (EP 64-256, 1-64 tokens; none on the RTX PRO 6000, "
             "EP <= 32): the wide-EP path's router, quantization and CUTLASS chain against the fitted vLLM "
             "kernel's t0.")
    return intro + "\n\n" + table(rows) + "\n\n" + floor + "\n\n" + floor_table(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=Path, metavar="KERNELS_DIR",
                    help=f"redraw tests/data/kernels/<gpu>/{TABLE} from KERNELS_DIR/<gpu>/{TABLE}")
    ap.add_argument("--update", type=Path, nargs="?", const=home("wideep-moe"), metavar="FILE",
                    help="replace the wideep-moe block of FILE (default: docs/accuracy.md)")
    args = ap.parse_args()
    if args.sample:
        print(sample(args.sample))
    text = block(scored())
    print(text)
    if args.update:
        replace_block(args.update, "wideep-moe", text)


if __name__ == "__main__":
    main()
