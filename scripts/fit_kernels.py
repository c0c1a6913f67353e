"""Fit the per-kernel models of `advisor/cost/kernels.py` to measured kernel latencies, check each on GPUs it
was not fitted on, and write the shipped parameters and the compact slices the tests use.

    python -m scripts.fit_kernels KERNELS_DIR [--out advisor/cost/kernel_params.json] [--slices tests/data/kernels]

KERNELS_DIR holds one folder per GPU with gzipped CSV tables (moe, gemm, attention_generation,
attention_context, mla_generation, mla_context, dsa_generation, gdn), measured by
NVIDIA's aiconfigurator collectors (ai-dynamo/aiconfigurator @095f58a5,
`aic-core/src/aiconfigurator_core/systems/data/<system>/`, Apache-2.0); tests/data/kernels/README.md says
where to get them. Each model has one parameter set per weight format (or KV dtype) shared by every GPU
(spec-sheet bandwidth and peak per GPU from hwprofiles/), fitted in log space with a robust loss;
leave-one-GPU-out refits without a GPU and predicts it.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scripts.kernel_tables import (
    BPP,
    COMPUTE,
    DSA_INDEX_BYTES,
    GPUS,
    SAMPLE,
    attention_rows,
    dsa_rows,
    gdn_rows,
    gemm_rows,
    marlin_rows,
    mla_prefill_rows,
    mla_rows,
    moe_rows,
    prefill_rows,
    spec,
)

REPO = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------ models on column arrays


def columns(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    out = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    specs = {g: spec(g) for g in GPUS}
    out["bw"] = np.array([specs[r["gpu"]]["bw"] for r in rows])
    out["peak_bf16"] = np.array([specs[r["gpu"]]["bf16"] for r in rows])
    if "fmt" in out:
        fmts = [r["fmt"].split("/")[0] for r in rows]  # MoE rows carry "format/kernel family"
        out["peak"] = np.array([specs[r["gpu"]][COMPUTE[f]] for r, f in zip(rows, fmts, strict=True)])
        out["bpp"] = np.array([BPP[f] for f in fmts])
    return out


def predict_moe(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import moe_us

    return moe_us(f, c["n_act"], c["pairs"], c["h"], c["I"] / c["tp"], c["mats"], c["bpp"], c["bw"], c["peak"], P)


def predict_marlin(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.marlin import MMA_SYNC_PEAK_SM, TENSOR_FLOPS_PER_SM_CYCLE, moe_us

    fpc = np.array([TENSOR_FLOPS_PER_SM_CYCLE[sm] for sm in c["sm"]])
    mma = np.where(np.isin(c["sm"], list(MMA_SYNC_PEAK_SM)), fpc, f["mma_sync_flops_per_sm_cycle"])  # `gpu_rates`
    return moe_us(f, c["n_act"], c["pairs"], c["blocks"], c["bm"], c["h"], c["I"] / c["tp"], c["mats"], c["bpp"],
                  c["bw"], c["peak"], fpc, mma, P["p"])


def predict_gemm(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import NO_INPUT_QUANT, TABLE_INPUT_QUANT, gemm_us

    quant = np.array([TABLE_INPUT_QUANT.get(fmt, NO_INPUT_QUANT) for fmt in c["fmt"]]).T
    return gemm_us(f, c["m"], c["n"], c["k"], c["n"] * c["k"] * c["bpp"], c["bw"], c["peak"], P, quant)


def predict_attention(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import attention_decode_us

    return attention_decode_us(f, c["b_kv"], c["b"], c["ctx"], c["h"], c["g"], c["d"], c["bw"], c["peak_bf16"], P)


def predict_prefill(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import attention_prefill_us

    return attention_prefill_us(f, c["b_kv"], c["tokens"], c["ctx"], c["h"], c["g"], c["d"], c["d"], c["bw"],
                                c["peak_bf16"], P)


def predict_mla_prefill(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    # ns per squared prompt token: b n^2 h (d_k + d_v) FLOPs (the causal half of QK^T and PV, up-projected
    # heads of DeepSeek-V3: d_k 128 + 64, d_v 128) at e_f of the BF16 peak
    return c["b"] * c["h"] * (192 + 128) / (c["peak_bf16"] * f["e_f"]) * 1e9


def predict_gdn_decode(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import gdn_decode_us

    return gdn_decode_us(f, c["b"], c["nv"], c["dk"], c["dv"], c["bw"])


def predict_gdn_prefill(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import gdn_prefill_us

    return gdn_prefill_us(f, c["b"], c["seq"], c["nv"], c["dk"], c["dv"], c["peak_bf16"], P["p"])


def predict_dsa(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import dsa_indexer_us

    return dsa_indexer_us(f, c["b"], c["ctx"], DSA_INDEX_BYTES, c["bw"])


def predict_mla(c: dict[str, np.ndarray], f: dict[str, np.ndarray], P: dict[str, float]) -> np.ndarray:
    from advisor.cost.kernels import mla_decode_us

    # DeepSeek-V3's latent (512 + 64 rope): every MLA model in the catalog uses it
    return mla_decode_us(f, c["b_kv"], c["b"], 1.0, c["h"], 512, 64, c["bw"], c["peak_bf16"], P) * 1e3


# model name -> (row key naming the parameter group, per-group parameters, shared parameters, predictor)
MODELS: dict[str, tuple[str, tuple[str, ...], dict[str, float], Callable[..., np.ndarray]]] = {
    "moe": ("fmt", ("t0_us", "e_bw", "e_f", "kappa_ns_per_B"), {"m_h": 16.0, "I_h": 20.0, "a_act_B": 8.0, "p": 1.5},
            predict_moe),
    "marlin_moe": ("kind", ("t0_us", "e_bw", "w_per_sm_cycle", "e_f", "mma_sync_flops_per_sm_cycle"), {"p": 4.0},
                   predict_marlin),
    "gemm": ("fmt", ("t0_us", "e_bw", "e_f"), {"m_h": 16.0, "p": 2.0}, predict_gemm),
    "attention": ("kv", ("t0_us", "e_bw", "e_f", "rho_ns_per_B"), {"p": 2.0}, predict_attention),
    "mla": ("cls", ("e_bw", "e_f"), {"p": 2.0}, predict_mla),
    "prefill": ("kv", ("t0_us", "e_bw", "e_f"), {"p": 2.0}, predict_prefill),
    "mla_prefill": ("kv", ("e_f",), {}, predict_mla_prefill),
    "gdn_decode": ("kind", ("t0_us", "e_bw"), {}, predict_gdn_decode),
    "dsa": ("kind", ("t0_us", "e_bw"), {}, predict_dsa),
    "gdn_prefill": ("kind", ("t0_us", "e_f", "seq_ns"), {"p": 2.0}, predict_gdn_prefill),
}
START = {"t0_us": 10.0, "e_bw": 0.8, "e_f": 0.4, "kappa_ns_per_B": 1.0, "rho_ns_per_B": 0.1, "seq_ns": 40.0,
         "w_per_sm_cycle": 20.0, "mma_sync_flops_per_sm_cycle": 2048.0}
EFFICIENCIES = ("e_bw", "e_f")


def fit(model: str, c: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per-group and shared parameters minimising soft-L1 log residuals (all positive: fitted in log space;
    efficiencies <= 1 of the spec sheet; p in [1, 20])."""
    from scipy.optimize import least_squares

    key, per, shared, predict = MODELS[model]
    groups = sorted(set(c[key]))
    gi = np.searchsorted(np.array(groups), c[key])
    names = [(g, n) for n in per for g in groups] + [(None, n) for n in shared]
    x0 = np.log([START[n] if g is not None else shared[n] for g, n in names])
    lo = np.full(len(names), -14.0)
    hi = np.array([0.0 if n in EFFICIENCIES else (np.log(20) if n == "p" else 14.0) for _, n in names])
    lo[[i for i, (_, n) in enumerate(names) if n == "p"]] = 0.0
    y = np.log(c["lat_us"])

    def unpack(x: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, float]]:
        v = np.exp(x)
        f = {n: v[j * len(groups):(j + 1) * len(groups)][gi] for j, n in enumerate(per)}
        P = {n: float(v[len(per) * len(groups) + j]) for j, n in enumerate(shared)}
        return f, P

    sol = least_squares(lambda x: np.log(predict(c, *unpack(x))) - y, np.clip(x0, lo + 1e-6, hi - 1e-6),
                        bounds=(lo, hi), loss="soft_l1", f_scale=0.1, max_nfev=400)
    v = np.exp(sol.x)
    by = {g: {n: float(v[j * len(groups) + i]) for j, n in enumerate(per)} for i, g in enumerate(groups)}
    return {**{n: float(v[len(per) * len(groups) + j]) for j, n in enumerate(shared)}, "by_" + key: by}


def evaluate(model: str, params: dict[str, Any], c: dict[str, np.ndarray]) -> np.ndarray:
    """Predicted microseconds; a group the parameters lack takes its format's median, as the runtime does for a
    GPU it never saw (`advisor/cost/kernels.py: group_params`)."""
    from advisor.cost.kernels import group_params

    key, per, shared, predict = MODELS[model]
    by = {g: group_params(params["by_" + key], g) for g in set(c[key])}
    f = {n: np.array([by[g][n] for g in c[key]]) for n in per}
    return predict(c, f, {n: params[n] for n in shared})


def errors(pred: np.ndarray, meas: np.ndarray) -> dict[str, float]:
    e = np.abs(pred / meas - 1) * 100
    return {"n": int(e.size), "median_abs_pct": round(float(np.median(e)), 1),
            "p90_abs_pct": round(float(np.percentile(e, 90)), 1)}


def leave_one_gpu_out(model: str, c: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Per GPU: refit without its rows, predict them."""
    out = {}
    for gpu in sorted(set(c["gpu"])):
        held = c["gpu"] == gpu
        train = {k: v[~held] for k, v in c.items()}
        test = {k: v[held] for k, v in c.items()}
        out[gpu] = errors(evaluate(model, fit(model, train), test), test["lat_us"])
    return out


SLICE_COLUMNS = {"moe": ("gpu", "fmt", "T", "h", "I", "k", "E", "tp", "ep", "dist", "n_act", "pairs", "mats",
                         "lat_us"),
                 "marlin_moe": ("gpu", "kind", "fmt", "sm", "T", "h", "I", "k", "E", "tp", "ep", "dist", "n_act",
                                "pairs", "bm", "blocks", "mats", "lat_us"),
                 "gemm": ("gpu", "fmt", "m", "n", "k", "lat_us"),
                 "attention": ("gpu", "kv", "b", "ctx", "h", "g", "d", "b_kv", "lat_us"),
                 "mla": ("gpu", "cls", "b", "h", "b_kv", "lat_us"),
                 "prefill": ("gpu", "kv", "tokens", "ctx", "h", "g", "d", "b_kv", "lat_us"),
                 "mla_prefill": ("gpu", "kv", "b", "h", "lat_us"),
                 "gdn_decode": ("gpu", "kind", "b", "seq", "nv", "dk", "dv", "lat_us"),
                 "dsa": ("gpu", "kind", "kv", "b", "ctx", "h", "lat_us"),
                 "gdn_prefill": ("gpu", "kind", "b", "seq", "nv", "dk", "dv", "lat_us")}


# what a model's rows are, where the file-wide `source` does not say it
ROWS = {"marlin_moe": "the MarlinExperts rows (w4a16_mxfp4, a marlin kernel_source) of every GPU: vLLM 0.24.0, a "
                      "0.1.dev19262 build on b200-sxm and b300-sxm; rows whose working set fits L2 left out "
                      "(scripts/kernel_tables.py: marlin_rows); INT4 experts are priced from it "
                      "(advisor/cost/marlin.py)"}


def write_slice(path: Path, model: str, rows: list[dict[str, Any]]) -> None:
    from advisor.files import atomic_output

    with atomic_output(path, "w") as fh:
        w = csv.DictWriter(fh, fieldnames=list(SLICE_COLUMNS[model]), extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (float(f"{v:.6g}") if isinstance(v, float) else v) for k, v in r.items()})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path, help="folder with one subfolder of kernel tables per GPU")
    ap.add_argument("--out", type=Path, default=REPO / "advisor" / "cost" / "kernel_params.json")
    ap.add_argument("--slices", type=Path, default=REPO / "tests" / "data" / "kernels")
    ap.add_argument("--only", nargs="*", help="refit only these models (names as in MODELS)")
    args = ap.parse_args()
    from advisor.files import write_atomic

    doc: dict[str, Any] = {"source": "ai-dynamo/aiconfigurator @095f58a5 measured kernel tables (vLLM 0.24.0 on "
                                     "rtx-pro-6000-server, h100-sxm, b200-sxm, b300-sxm, gb200, l40s; 0.14.0 on "
                                     "a100-sxm), fitted by scripts/fit_kernels.py", "sampled_rows": SAMPLE}
    readers = {"moe": moe_rows, "marlin_moe": marlin_rows, "gemm": gemm_rows, "attention": attention_rows,
               "mla": mla_rows, "prefill": prefill_rows, "mla_prefill": mla_prefill_rows,
               "gdn_decode": lambda src: gdn_rows(src, "generation"),
               "gdn_prefill": lambda src: gdn_rows(src, "context"), "dsa": dsa_rows}
    only = [m for m in readers if m in (args.only or readers)]
    if args.only:  # refit some models, keep the others' shipped parameters
        doc = {**json.loads(args.out.read_text(encoding="utf-8")), **doc}
    readers = {m: readers[m] for m in only}
    for model, read in readers.items():
        rows = read(args.src)
        c = columns(rows)
        params = fit(model, c)
        params["in_sample"] = errors(evaluate(model, params, c), c["lat_us"])
        params["logo"] = leave_one_gpu_out(model, c)
        if model in ROWS:
            params["rows"] = ROWS[model]
        doc[model] = params
        args.slices.mkdir(parents=True, exist_ok=True)
        write_slice(args.slices / f"{model}.csv", model, rows)
        print(model, "in-sample", params["in_sample"], flush=True)
        for gpu, e in params["logo"].items():
            print(f"   held out {gpu:22s} median {e['median_abs_pct']:5.1f}%  p90 {e['p90_abs_pct']:5.1f}%  n={e['n']}")
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
