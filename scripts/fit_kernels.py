"""Fit the per-kernel models of `advisor/cost/kernels.py` to measured kernel latencies, check each on GPUs it
was not fitted on, and write the shipped parameters and the compact slices the tests use.

    python scripts/fit_kernels.py KERNELS_DIR [--out advisor/cost/kernel_params.json] [--slices tests/data/kernels]

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
import gzip
import json
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_routing import features as routing  # noqa: E402

GPUS = ("rtx-pro-6000-server", "h100-sxm", "b200-sxm", "b300-sxm", "a100-sxm", "l40s", "gb200")
SAMPLE = 12000  # rows per table kept for the fit and the slice (spread over GPUs, seeded)
# bytes per weight element incl. scales, and the tensor-core dtype each kernel-table format computes in
BPP = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0 + 4 / 16384, "nvfp4": 0.5 + 1 / 16, "int4_wo": 0.5 + 2 / 32,
       "w4a16_mxfp4": 0.5 + 1 / 32}
COMPUTE = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "nvfp4": "fp4", "int4_wo": "bf16",
           "w4a16_mxfp4": "bf16"}
NONGATED = {(2688, 1856, 6, 128), (4096, 2688, 22, 512), (2048, 5120, 22, 512), (1024, 2688, 22, 512)}  # relu2


def gpu_section(gpu: str) -> dict[str, Any]:
    """The `[gpu]` table of the GPU's shipped hardware profile."""
    return tomllib.loads((REPO / "hwprofiles" / f"{gpu}.toml").read_text())["gpu"]


def spec(gpu: str) -> dict[str, float]:
    g = gpu_section(gpu)
    return {"bw": g["mem_bw_bytes_per_s"], "bf16": g["bf16_dense_flops_per_s"],
            "fp8": g.get("fp8_dense_flops_per_s") or g["bf16_dense_flops_per_s"],
            "fp4": g.get("fp4_dense_flops_per_s") or g["bf16_dense_flops_per_s"]}


def read_table(src: Path, gpu: str, table: str) -> list[dict[str, str]]:
    path = src / gpu / f"{table}.csv.gz"
    if not path.exists():
        return []
    with gzip.open(path, "rt", newline="") as fh:
        return list(csv.DictReader(fh))


def sample(rows: list[dict[str, Any]], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """At most n rows, the same share from every GPU (deterministic)."""
    rng = np.random.default_rng(seed)
    by_gpu: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_gpu.setdefault(r["gpu"], []).append(r)
    per = max(1, n // max(len(by_gpu), 1))
    out = []
    for g in sorted(by_gpu):
        rs = by_gpu[g]
        idx = rng.choice(len(rs), size=min(per, len(rs)), replace=False)
        out += [rs[i] for i in sorted(idx)]
    return out


# ------------------------------------------------------------------ rows of each table


def default_kernel(rows: list[dict[str, str]], by: str) -> dict[str, str]:
    """Per value of column `by`, the kernel the table times most often: the one vLLM picks by default there
    (the collectors sweep it widely and a forced alternative on a few shapes, e.g. Marlin beside FlashInfer's
    TRT-LLM MXFP4 kernel for gpt-oss on B200)."""
    count: dict[str, dict[str, int]] = {}
    for r in rows:
        c = count.setdefault(r[by], {})
        c[r["kernel_source"]] = c.get(r["kernel_source"], 0) + 1
    return {k: max(c, key=lambda s: c[s]) for k, c in count.items()}


def family(kernel_source: str) -> str:
    """A MoE kernel's family from the collector's name (`..._flashinfer_trtllm_...`, `..._marlin_...`)."""
    for name in ("trtllm", "cutlass", "marlin"):
        if name in kernel_source:
            return name
    return "triton"  # OpenAI's Triton MXFP4 kernel, vLLM's Triton fused_moe


def moe_rows(src: Path) -> list[dict[str, Any]]:
    """One fused-MoE call per row (configurations an 8-GPU node runs; DeepSeek's grouped router left out), by
    the format's default kernel on each GPU, with its routing on the measured rank: active local experts and
    (token, expert) pairs. INT4 Marlin and FlashInfer CUTLASS rows are grouped by GPU generation
    (`kernels.MARLIN_INT4_FAMILY`, `kernels.CUTLASS_MOE_FAMILY`)."""
    from advisor.cost.kernels import CUTLASS_MOE_FAMILY, MARLIN_INT4_FAMILY

    out = []
    for gpu in GPUS:
        sm = gpu_section(gpu)["sm"]
        # families the runtime splits by GPU generation (`kernels.moe_family`)
        by_generation = {"cutlass": CUTLASS_MOE_FAMILY.get(sm, "cutlass")}
        int4 = {"marlin": MARLIN_INT4_FAMILY.get(sm, "marlin")}
        table = read_table(src, gpu, "moe")
        kernel = default_kernel(table, "moe_dtype")
        for r in table:
            fmt = r["moe_dtype"]
            if fmt not in BPP or r["kernel_source"] != kernel[fmt]:
                continue
            T, h, inter, k, E = (int(r[c]) for c in ("num_tokens", "hidden_size", "inter_size", "topk",
                                                      "num_experts"))
            tp, ep = int(r["moe_tp_size"]), int(r["moe_ep_size"])
            if tp * ep > 8 or (h, inter, k, E) == (7168, 2048, 8, 256) or T > 8192:
                continue
            fam = family(r["kernel_source"])
            fam = (int4 if fmt == "int4_wo" else by_generation).get(fam, fam)
            out.append({"gpu": gpu, "fmt": f"{fmt}/{fam}", "T": T, "h": h, "I": inter, "k": k, "E": E, "tp": tp,
                        "ep": ep, "dist": r["distribution"], "lat_us": float(r["latency_ms"]) * 1e3})
    rows = sample(out, SAMPLE)
    for row in rows:  # `r` above is a table row of strings
        row["n_act"], row["pairs"], _ = routing(row["T"], row["h"], row["I"], row["k"], row["E"], row["ep"],
                                                row["dist"])
        row["mats"] = 2.0 if (row["h"], row["I"], row["k"], row["E"]) in NONGATED else 3.0
    return rows


def gemm_rows(src: Path) -> list[dict[str, Any]]:
    out = []
    for gpu in GPUS:
        for r in read_table(src, gpu, "gemm"):
            if r["gemm_dtype"] not in ("bfloat16", "fp8", "nvfp4"):
                continue  # block-FP8 rows carry a ~180 us fixed cost on every GPU: not the serving path's
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            out.append({"gpu": gpu, "fmt": r["gemm_dtype"], "m": m, "n": n, "k": k,
                        "lat_us": float(r["latency_ms"]) * 1e3})
    return sample(out, SAMPLE)


def attention_rows(src: Path) -> list[dict[str, Any]]:
    """Decode attention by the KV dtype's default kernel on each GPU, grouped by KV dtype and the kernel family of
    the GPU's generation (`kernels.attention_group`); context = step + 1. Rows whose KV lies between 8 and 256 MB
    partly hit L2 in the collector (no flush) and are left out."""
    from advisor.cost.kernels import attention_group

    out = []
    for gpu in GPUS:
        sm = gpu_section(gpu)["sm"]
        table = read_table(src, gpu, "attention_generation")
        kernel = default_kernel(table, "kv_cache_dtype")
        for r in table:
            if r["kernel_source"] != kernel[r["kv_cache_dtype"]]:
                continue
            b, ctx = int(r["batch_size"]), int(r["step"]) + 1
            w = int(r.get("window_size") or 0)
            ctx_e = min(ctx, w) if w else ctx
            b_kv = 1.0 if r["kv_cache_dtype"] == "fp8" else 2.0
            g, d = int(r["num_key_value_heads"]), int(r["head_dim"])
            kv = b * ctx_e * g * d * 2 * b_kv
            if 8e6 < kv < 256e6:
                continue
            out.append({"gpu": gpu, "kv": attention_group(r["kv_cache_dtype"], sm), "b": b, "ctx": ctx_e,
                        "h": int(r["num_heads"]),
                        "g": g, "d": d, "b_kv": b_kv, "lat_us": float(r["latency_ms"]) * 1e3})
    return sample(out, SAMPLE)


def prefill_rows(src: Path) -> list[dict[str, Any]]:
    """Prefill attention over whole prompts (no prefix, no sliding window), by the kernel vLLM runs by default
    on each GPU: the table's most common kernel there (FA3 on H100, FlashInfer TRT-LLM prefill on B200), grouped
    by KV dtype and that kernel family (`kernels.attention_group`)."""
    from advisor.cost.kernels import attention_group

    out = []
    for gpu in GPUS:
        sm = gpu_section(gpu)["sm"]
        rows = [r for r in read_table(src, gpu, "attention_context")
                if r["step"] == "0" and int(r.get("window_size") or 0) == 0]
        if not rows:
            continue
        kernel = max(set(r["kernel_source"] for r in rows), key=[r["kernel_source"] for r in rows].count)
        for r in rows:
            if r["kernel_source"] != kernel:
                continue
            b, isl, d = int(r["batch_size"]), int(r["isl"]), int(r["head_dim"])
            out.append({"gpu": gpu, "kv": attention_group(r["kv_cache_dtype"], sm), "tokens": b * isl, "ctx": isl / 2,
                        "h": int(r["num_heads"]), "g": int(r["num_key_value_heads"]), "d": d,
                        "b_kv": 1.0 if r["kv_cache_dtype"] == "fp8" else 2.0, "lat_us": float(r["latency_ms"]) * 1e3})
    return sample(out, SAMPLE)


def mla_prefill_rows(src: Path) -> list[dict[str, Any]]:
    """MLA prefill: the tables time the whole module
    (projections + attention), so per (GPU, KV dtype, heads, batch) the quadratic term of latency against the
    prompt length (least squares over prompts of 4k-32k tokens, BF16 projections, TP 1) is the attention's:
    `lat_us` = ns per squared prompt token. DeepSeek-V3's heads: d_k = 128 + 64, d_v = 128."""
    groups: dict[tuple[str, str, int, int], list[tuple[float, float]]] = {}
    for gpu in GPUS:
        for r in read_table(src, gpu, "mla_context"):
            if r["tp_size"] != "1" or r["gemm_type"] != "bfloat16" or r["kernel_source"] not in ("FLASH_ATTN",
                                                                                                 "TRITON_MLA"):
                continue
            if int(r["isl"]) >= 4096:
                key = (gpu, r["kv_cache_dtype"], int(r["num_heads"]), int(r["batch_size"]))
                groups.setdefault(key, []).append((float(r["isl"]), float(r["latency_ms"])))
    out = []
    for (gpu, kv, h, b), pts in sorted(groups.items()):
        x, y = np.array(pts).T
        if len(x) < 4:
            continue
        quad = np.polyfit(x, y, 2)[0] * 1e6  # ns per squared prompt token
        if quad > 0:
            out.append({"gpu": gpu, "kv": kv, "b": b, "h": h, "lat_us": quad})
    return out


def gdn_rows(src: Path, phase: str) -> list[dict[str, Any]]:
    """Gated DeltaNet layers (gdn tables, Qwen3.5 shapes): per configuration the causal conv1d and the delta-rule
    kernel summed (`phase` "generation": decode, "context": prefill of `b` prompts of `seq` tokens)."""
    out = []
    for gpu in GPUS:
        acc: dict[tuple[Any, ...], list[float]] = {}
        for r in read_table(src, gpu, "gdn"):
            if r["phase"] == phase:
                key = tuple(int(r[c]) for c in ("batch_size", "seq_len", "num_v_heads", "head_k_dim", "head_v_dim"))
                acc.setdefault(key + (r["model_name"],), []).append(float(r["latency_ms"]) * 1e3)
        for (b, seq, nv, dk, dv, _), lats in acc.items():
            if len(lats) == 2:  # conv + delta rule
                out.append({"gpu": gpu, "kind": "gdn", "b": b, "seq": seq, "nv": nv, "dk": dk, "dv": dv,
                            "lat_us": sum(lats)})
    return sample(out, SAMPLE)


NATIVE_MLA_SM = ("sm90", "sm100", "sm103")  # FlashMLA / FlashInfer / CUTLASS MLA; other GPUs run Triton MLA


def mla_rows(src: Path) -> list[dict[str, Any]]:
    """MLA decode: the tables time the whole module (projections + attention), so only its growth with
    context is the attention kernel's: per (GPU, KV dtype, heads, batch) the least-squares slope of latency
    against context (ns per context token), at TP 1 with BF16 projections."""
    groups: dict[tuple[str, str, int, int], list[tuple[float, float]]] = {}
    for gpu in GPUS:
        for r in read_table(src, gpu, "mla_generation"):
            if r["tp_size"] != "1" or r["mla_dtype"] != "bfloat16":
                continue
            key = (gpu, r["kv_cache_dtype"], int(r["num_heads"]), int(r["batch_size"]))
            groups.setdefault(key, []).append((int(r["isl"]) + int(r["step"]), float(r["latency_ms"])))
    out = []
    for (gpu, kv, h, b), pts in sorted(groups.items()):
        x, y = np.array(pts).T
        if len(x) < 4 or np.ptp(x) < 4096:
            continue
        slope = np.polyfit(x, y, 1)[0] * 1e6  # ns per context token
        if slope <= 0:
            continue
        sm = gpu_section(gpu)["sm"]
        cls = ("native" if sm in NATIVE_MLA_SM else "triton") + "/" + ("fp8" if kv == "fp8" else "bfloat16")
        out.append({"gpu": gpu, "cls": cls, "b": b, "h": h, "b_kv": 1.0 if kv == "fp8" else 2.0,
                    "lat_us": slope})  # the fitted target: ns per context token
    return out


DSA_INDEX_BYTES = 128 + 4  # DeepSeek-V3.2's indexer cache per token: 128 FP8 values + one fp32 scale


def dsa_rows(src: Path) -> list[dict[str, Any]]:
    """DSA decode: what the DeepSeek sparse attention module (dsa_generation: indexer + top-k attention, V3.2 shapes)
    costs beyond the MLA module (mla_generation) timed at the same GPU, KV dtype, projection format, heads, batch
    and context, at contexts up to the top-k (2048), where both attend every token: the indexer chain (its
    projections, norm, rope, cache write, FP8 logits over the context, top-k). Each table by its default kernel."""
    out = []
    for gpu in GPUS:
        dsa, mla = read_table(src, gpu, "dsa_generation"), read_table(src, gpu, "mla_generation")
        if not dsa or not mla:
            continue
        d_kernel, m_kernel = default_kernel(dsa, "kv_cache_dtype"), default_kernel(mla, "kv_cache_dtype")

        def key(r: dict[str, str]) -> tuple[str, ...]:
            return tuple(r[c] for c in ("kv_cache_dtype", "gemm_type", "num_heads", "batch_size", "isl", "step"))

        base = {key(r): float(r["latency_ms"]) for r in mla if r["kernel_source"] == m_kernel[r["kv_cache_dtype"]]
                and r["tp_size"] == "1"}
        for r in dsa:
            ctx = int(r["isl"]) + int(r["step"])
            if r["kernel_source"] != d_kernel[r["kv_cache_dtype"]] or r["tp_size"] != "1" or ctx > 2048 \
                    or key(r) not in base:
                continue
            delta = (float(r["latency_ms"]) - base[key(r)]) * 1e3
            if delta > 0:
                out.append({"gpu": gpu, "kind": "dsa", "kv": r["kv_cache_dtype"], "b": int(r["batch_size"]),
                            "ctx": ctx, "h": int(r["num_heads"]), "lat_us": delta})
    return sample(out, SAMPLE)


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
    "gemm": ("fmt", ("t0_us", "e_bw", "e_f"), {"m_h": 16.0, "p": 2.0}, predict_gemm),
    "attention": ("kv", ("t0_us", "e_bw", "e_f", "rho_ns_per_B"), {"p": 2.0}, predict_attention),
    "mla": ("cls", ("e_bw", "e_f"), {"p": 2.0}, predict_mla),
    "prefill": ("kv", ("t0_us", "e_bw", "e_f"), {"p": 2.0}, predict_prefill),
    "mla_prefill": ("kv", ("e_f",), {}, predict_mla_prefill),
    "gdn_decode": ("kind", ("t0_us", "e_bw"), {}, predict_gdn_decode),
    "dsa": ("kind", ("t0_us", "e_bw"), {}, predict_dsa),
    "gdn_prefill": ("kind", ("t0_us", "e_f", "seq_ns"), {"p": 2.0}, predict_gdn_prefill),
}
START = {"t0_us": 10.0, "e_bw": 0.8, "e_f": 0.4, "kappa_ns_per_B": 1.0, "rho_ns_per_B": 0.1, "seq_ns": 40.0}
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
                 "gemm": ("gpu", "fmt", "m", "n", "k", "lat_us"),
                 "attention": ("gpu", "kv", "b", "ctx", "h", "g", "d", "b_kv", "lat_us"),
                 "mla": ("gpu", "cls", "b", "h", "b_kv", "lat_us"),
                 "prefill": ("gpu", "kv", "tokens", "ctx", "h", "g", "d", "b_kv", "lat_us"),
                 "mla_prefill": ("gpu", "kv", "b", "h", "lat_us"),
                 "gdn_decode": ("gpu", "kind", "b", "seq", "nv", "dk", "dv", "lat_us"),
                 "dsa": ("gpu", "kind", "kv", "b", "ctx", "h", "lat_us"),
                 "gdn_prefill": ("gpu", "kind", "b", "seq", "nv", "dk", "dv", "lat_us")}


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
    readers = {"moe": moe_rows, "gemm": gemm_rows, "attention": attention_rows, "mla": mla_rows,
               "prefill": prefill_rows, "mla_prefill": mla_prefill_rows,
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
