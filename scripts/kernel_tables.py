"""The measured kernel tables (aiconfigurator's collectors, ai-dynamo/aiconfigurator @095f58a5; where to get them:
tests/data/kernels/README.md) read into one row per kernel call, with the features the kernel models of
`advisor/cost/kernels.py` take: the GPU's spec-sheet bandwidth and peak, each MoE row's routing on the measured
rank, each format's bytes per weight. `scripts/fit_kernels.py` fits the models to these rows.
"""

from __future__ import annotations

import csv
import gzip
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from scripts.kernel_routing import features as routing

REPO = Path(__file__).resolve().parents[1]

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
    (token, expert) pairs. The INT4 rows (vLLM's WNA16 kernels, not Marlin: `kernels.WNA16_TABLE_FAMILY`) and
    FlashInfer CUTLASS rows are grouped by GPU generation (`kernels.CUTLASS_MOE_FAMILY`)."""
    from advisor.cost.kernels import CUTLASS_MOE_FAMILY, WNA16_TABLE_FAMILY

    out = []
    unread: dict[str, int] = {}  # formats the tables time that no storage format of ours runs
    for gpu in GPUS:
        sm = gpu_section(gpu)["sm"]
        # families the runtime splits by GPU generation (`kernels.moe_family`)
        by_generation = {"cutlass": CUTLASS_MOE_FAMILY.get(sm, "cutlass")}
        int4 = {"marlin": WNA16_TABLE_FAMILY.get(sm, "wna16")}  # the collector names them marlin
        table = read_table(src, gpu, "moe")
        kernel = default_kernel(table, "moe_dtype")
        for r in table:
            fmt = r["moe_dtype"]
            if fmt not in BPP:
                unread[fmt] = unread.get(fmt, 0) + 1
                continue
            if r["kernel_source"] != kernel[fmt]:
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
    if unread:  # e.g. w4a8_mxfp4_mxfp8, the MXFP8-activation MXFP4 kernel TensorRT-LLM runs on Blackwell
        print("moe: formats left out (no bytes per weight in BPP): "
              + ", ".join(f"{f} ({n} rows)" for f, n in sorted(unread.items())), file=sys.stderr)
    rows = sample(out, SAMPLE)
    for row in rows:  # `r` above is a table row of strings
        row["n_act"], row["pairs"], _ = routing(row["T"], row["h"], row["I"], row["k"], row["E"], row["ep"],
                                                row["dist"])
        row["mats"] = 2.0 if (row["h"], row["I"], row["k"], row["E"]) in NONGATED else 3.0
    return rows


MARLIN_MATS = 3.0  # the MarlinExperts rows' models (gpt-oss, Kimi-K3) gate their experts: gate, up, down


def marlin_rows(src: Path) -> list[dict[str, Any]]:
    """The MarlinExperts rows (`marlin` in the kernel name: W4A16 MXFP4 experts on every GPU, gpt-oss shapes on the
    RTX PRO 6000 and L40S, Kimi-K3's elsewhere; the kernel INT4 experts run, `advisor/cost/marlin.py`), configurations
    one node runs, each with its routing on the measured rank and its M-blocks counted from that routing
    (`marlin_blocks`). Rows whose working set fits the GPU's L2 (hwprofiles `l2_bytes`) are left out: the collector
    re-reads one weight set, which then stays in L2, where a serving step streams every layer's from DRAM."""
    out = []
    for gpu in GPUS:
        l2, sm = gpu_section(gpu).get("l2_bytes") or 0, gpu_section(gpu)["sm"]
        for r in read_table(src, gpu, "moe"):
            if r["moe_dtype"] != "w4a16_mxfp4" or "marlin" not in r["kernel_source"]:
                continue
            T, h, inter, k, E = (int(r[c]) for c in ("num_tokens", "hidden_size", "inter_size", "topk",
                                                      "num_experts"))
            tp, ep, dist = int(r["moe_tp_size"]), int(r["moe_ep_size"]), r["distribution"]
            if tp * ep > 8 or T > 8192:
                continue
            n_act, pairs, _ = routing(T, h, inter, k, E, ep, dist)
            draws = 1 if dist == "balanced" else 5  # collect_moe.py times 5 power-law routings per row
            if min(E / ep, n_act * draws) * MARLIN_MATS * h * inter / tp * BPP["w4a16_mxfp4"] <= l2:
                continue
            bm, nblk = marlin_blocks(T, h, inter, k, E, ep, dist)
            out.append({"gpu": gpu, "kind": "marlin", "fmt": "w4a16_mxfp4", "sm": sm, "T": T,
                        "h": h, "I": inter, "k": k, "E": E, "tp": tp, "ep": ep, "dist": dist, "n_act": n_act,
                        "pairs": pairs, "bm": bm, "blocks": nblk, "mats": MARLIN_MATS,
                        "lat_us": float(r["latency_ms"]) * 1e3})
    return out


def marlin_blocks(T: int, h: int, inter: int, k: int, E: int, ep: int, dist: str, R: int = 8,
                  seed: int = 0) -> tuple[float, float]:
    """(bm, M-blocks on EP rank 0) of one table row: vLLM `fused_marlin_moe` block_size_m (`marlin.block_m` of
    T k / E_local) and sum over local experts of ceil(tokens / bm), from the row's routing (`scripts/kernel_routing.py`,
    the same draws as `features`)."""
    from advisor.cost.marlin import block_m
    from scripts import kernel_routing as kr

    local = E // ep
    bm = float(block_m(T * k / local))
    grouped = kr.GROUPED.get((h, inter, k, E))

    def count(sel: np.ndarray) -> float:
        chosen = kr.route(sel, E, k, grouped)
        c = np.bincount(chosen[chosen < local], minlength=local)
        return float(np.ceil(c / bm).sum())

    if dist == "balanced":
        return bm, count(kr.balanced_sel(T, E, k))
    alpha = float(dist.split("_")[-1])
    rng = np.random.default_rng(seed + 7919 * T + 31 * E + ep)
    return bm, float(np.mean([count(kr.power_law_sel(T, E, k, ep, alpha, rng)) for _ in range(R)]))


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


GDN_STATE_BYTES = 2  # BF16: vLLM `mamba_utils.py: gated_delta_net_state_dtype`, the model dtype unless set
L2_STREAM_US = 1.0  # a state that streams from DRAM in less than this runs at the kernel's floor either way


def gdn_rows(src: Path, phase: str) -> list[dict[str, Any]]:
    """Gated DeltaNet layers (gdn tables, Qwen3.5 shapes): per configuration the causal conv1d and the delta-rule
    kernel summed (`phase` "generation": decode, "context": prefill of `b` prompts of `seq` tokens). Decode rows
    whose state fits the GPU's L2 (hwprofiles `l2_bytes`) and would take more than `L2_STREAM_US` to read and
    write from DRAM are left out: the collector updates one state call after call, which then stays in L2 (on the
    GDDR GPUs 2-4x faster than the DRAM line), where a serving step streams every layer's from DRAM."""
    out = []
    for gpu in GPUS:
        g = gpu_section(gpu)
        l2, bw = g.get("l2_bytes") or 0, g["mem_bw_bytes_per_s"]
        acc: dict[tuple[Any, ...], list[float]] = {}
        for r in read_table(src, gpu, "gdn"):
            if r["phase"] == phase:
                key = tuple(int(r[c]) for c in ("batch_size", "seq_len", "num_v_heads", "head_k_dim", "head_v_dim"))
                acc.setdefault(key + (r["model_name"],), []).append(float(r["latency_ms"]) * 1e3)
        for (b, seq, nv, dk, dv, _), lats in acc.items():
            state = b * nv * dk * dv * GDN_STATE_BYTES
            if phase == "generation" and state <= l2 and 2 * state / bw * 1e6 > L2_STREAM_US:
                continue
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
