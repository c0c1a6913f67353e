"""What a measured disaggregated run's recipe passed to its engine beyond the plan: SGLang's redundant expert slots
(`--ep-num-redundant-experts`, `arch/redundant.py`), memory fraction (`--mem-fraction-static`), MoE all-to-all
(`--moe-a2a-backend deepep` or `--enable-deepep-moe`) and receive interval (`--scheduler-recv-interval`) on each
side, for the `<side>_redundant_experts`, `<side>_mem_fraction`, `<side>_moe_a2a` and `<side>_recv_interval` cells
of silicon_disagg_dev.csv (`recipe_cells`).

A row takes them from the recipes its configurations ran (`config_ref`, one or more `file@commit key [recipe]`):
every configuration it names must have an entry below for its lengths and decode worker size, and the entries must
agree; otherwise the cells stay empty (not established: the engine's defaults are modelled). Each entry names the
recipe file read and how it is established: `read` (the flag in the recipe revision named) or `inferred` (the
revision the run pinned is not available; the value is the one every recipe of that family read passes, and for
EP48 the only one that forms: SGLang places experts + slots evenly over the EP ranks, so 256 experts over 48 ranks
need slots, `srt/eplb/expert_location.py`). tests/data/bench/README.md ("Redundant experts, memory
fraction, MoE all-to-all") gives the rule and the rows it settles; each entry below names its source.
"""

from __future__ import annotations

from dataclasses import dataclass

CELLS = ("prefill_redundant_experts", "prefill_mem_fraction", "prefill_moe_a2a", "decode_redundant_experts",
         "decode_mem_fraction", "decode_moe_a2a", "prefill_recv_interval", "decode_recv_interval")
ELNIFIO = ("components/backends/sglang/slurm_jobs/scripts/gb200-fp8.sh of the Dynamo fork InferenceX cloned "
           "unpinned (Elnifio/dynamo update-result-file-name); every revision read passes the decode side "
           "--mem-fraction-static 0.82, --ep-num-redundant-experts 32 and DeepEP (--enable-deepep-moe or "
           "--moe-a2a-backend deepep) on both sides: Elnifio 0bf64d4c, ai-dynamo/dynamo 085194da, and "
           "wxsms/dynamo 0ab6bc2b (a copy of ai-dynamo's script of late October 2025, the one whose arguments and "
           "context length fit the launch); the prefill side's fraction differs between them (none or 0.8), not "
           "recorded")
SRT = "ishandhanani/srt-slurm sa-submission-q1-2026"  # the branch runners/launch_gb*-nv.sh check out (2026-02)
INFERRED_EP48 = ("inferred: the pinned script revision is not available; EP48 over 256 experts forms only with "
                 "redundant slots, 32 in every GB200/GB300 DeepSeek recipe of SGLang read, each of which runs its "
                 "DEP decode with DeepEP")
LOW_LATENCY = ("--mem-fraction-static 0.95 on both sides in every GB200 FP8 low-latency script read "
               "(ai-dynamo/dynamo examples/backends/sglang/slurm_jobs/scripts/gb200-fp8/disagg/1p_4d.sh 341b5dff, "
               "8k1k-low-latency.sh bc8ca754; srt-slurm recipes/gb200-fp8/1k1k/low-latency.yaml)")


@dataclass(frozen=True)
class Recipe:
    """The flags of one configuration's recipe: `ref` is text of the row's config_ref naming the configuration,
    `isl` and `decode_gpus` (GPUs of one decode worker) narrow it where one configuration ran several scripts."""

    ref: str
    isl: int | None
    decode_gpus: int | None
    prefill: tuple[str, str, str]  # (redundant experts, memory fraction, MoE all-to-all); "" not established
    decode: tuple[str, str, str]
    how: str  # read | inferred
    source: str
    recv: tuple[str, str] = ("", "")  # --scheduler-recv-interval (prefill, decode); "" not established


# The srtctl low-latency recipes' --scheduler-recv-interval (prefill, decode): NVIDIA/srt-slurm main of the runs'
# days (b2c9f1a4 of 2026-02-07) and 5063eb43 pass the same; the DEP recipes pass none (SGLang's receive skipper
# refuses attention DP, `managers/scheduler_recv_skipper.py`), and the 2025 scripts' are not established
RECV_10 = ("10", "10")
RECV_10_1 = ("10", "1")


A2A_HEAD = ("moe-a2a-backend deepep as NVIDIA/srt-slurm 04ff0a0a has the same file (the fork revision the run "
            "pinned was read for the other flags)")
DEP_BOTH = "ep-num-redundant-experts 32 and moe-a2a-backend deepep both sides"
DEP_DECODE = "ep-num-redundant-experts 32 and moe-a2a-backend deepep on the decode side only"
# NVIDIA/srt-slurm main in force on the run's day (b2c9f1a4 of 2026-02-07 until 2026-02-10, 452bb8d4 of 2026-02-11
# until 2026-02-13) and its later 5063eb43 (the fork branch merged) and 04ff0a0a pass the same flags
MAIN_0207 = "the same in NVIDIA/srt-slurm main of the run's day (b2c9f1a4), 5063eb43 and 04ff0a0a"
MAIN_0211 = "the same in NVIDIA/srt-slurm main of the run's day (452bb8d4), 5063eb43 and 04ff0a0a"
TP_BOTH = "no ep-num-redundant-experts and no moe-a2a-backend either side (TP, expert-parallel-size 1)"
RECIPES: tuple[Recipe, ...] = (
    # Before 2025-12-05 InferenceX's own launcher ran Elnifio's Dynamo fork for every ISL (the rack-scale rows)
    Recipe("runners/launch_gb200-nv.sh@450d834a9 dsr1-fp8-gb200-dynamo-sglang", None, None,
           ("32", "", "deepep"), ("32", "0.82", "deepep"), "read", ELNIFIO),
    # benchmarks/dsr1_fp8_gb200_dynamo-sglang_slurm.sh@93e1b3ca1: 8k1k clones Elnifio's fork, 1k1k the
    # ishan/sa-1.1-sgl-dsr1-fp8 branch of ai-dynamo/dynamo (1k1k-max-tpt or 1p_4d)
    Recipe("nvidia-master.yaml@93e1b3ca1 dsr1-fp8-gb200-dynamo-sglang", 8192, None,
           ("32", "", "deepep"), ("32", "0.82", "deepep"), "read", ELNIFIO),
    Recipe("nvidia-master.yaml@93e1b3ca1 dsr1-fp8-gb200-dynamo-sglang", 1024, 48,
           ("", "", ""), ("32", "", "deepep"), "inferred", INFERRED_EP48),
    Recipe("runners/launch_gb200-nv.sh@175fe5364 dsr1-fp8-gb200-dynamo-sglang", 1024, 48,
           ("", "", ""), ("32", "", "deepep"), "inferred", INFERRED_EP48),
    Recipe("nvidia-master.yaml@93e1b3ca1 dsr1-fp8-gb200-dynamo-sglang", 1024, 4,
           ("", "0.95", ""), ("", "0.95", ""), "read", LOW_LATENCY),
    Recipe("runners/launch_gb200-nv.sh@175fe5364 dsr1-fp8-gb200-dynamo-sglang", 1024, 4,
           ("", "0.95", ""), ("", "0.95", ""), "read", LOW_LATENCY),
    # c040b5cf2 / c4cde0370: ai-dynamo/dynamo b7107d00 examples/backends/sglang/slurm_jobs, SCRIPT_MODE per entry
    Recipe("nvidia-master.yaml@c040b5cf2 dsr1-fp8-gb200-dynamo-sglang", 1024, 48,
           ("", "", ""), ("32", "", "deepep"), "inferred", INFERRED_EP48),
    Recipe("nvidia-master.yaml@c040b5cf2 dsr1-fp4-gb200-dynamo-sglang", None, 48,
           ("", "", ""), ("32", "", "deepep"), "inferred", INFERRED_EP48),
    Recipe("nvidia-master.yaml@c040b5cf2 dsr1-fp8-gb200-dynamo-sglang", None, 4,
           ("", "0.95", ""), ("", "0.95", ""), "inferred", LOW_LATENCY),
    Recipe("nvidia-master.yaml@c4cde0370 dsr1-fp8-gb200-dynamo-sglang", 8192, 4,
           ("", "0.95", ""), ("", "0.95", ""), "inferred", LOW_LATENCY),
    # 2026-02: srtctl recipes (file: the recipe path of the configuration)
    Recipe("recipes/gb200-fp8/1k1k/low-latency.yaml", None, None, ("0", "0.95", "none"), ("0", "0.95", "none"),
           "read", "NVIDIA/srt-slurm 96f34420 recipes/gb200-fp8/1k1k/low-latency.yaml: mem-fraction-static 0.95, "
           "no ep-num-redundant-experts, no moe-a2a-backend, both sides", recv=RECV_10),
    Recipe("recipes/gb200-fp8/1k1k/mid-curve.yaml", None, None, ("32", "0.75", "deepep"), ("32", "0.82", "deepep"),
           "read", "NVIDIA/srt-slurm eb889c08 recipes/gb200-fp8/1k1k/mid-curve.yaml: ep-num-redundant-experts 32 "
           "and moe-a2a-backend deepep both sides, mem-fraction-static 0.75 / 0.82"),
    Recipe("recipes/gb200-fp8/8k1k/max_tpt.yaml", None, None, ("32", "0.80", "deepep"), ("32", "0.82", "deepep"),
           "read", "NVIDIA/srt-slurm eb889c08 recipes/gb200-fp8/8k1k/max_tpt.yaml: ep-num-redundant-experts 32 "
           "and moe-a2a-backend deepep both sides, mem-fraction-static 0.80 / 0.82"),
    Recipe("recipes/gb300-fp8/8k1k/stp/max.yaml", None, None, ("32", "0.75", "deepep"), ("32", "0.82", "deepep"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb300-fp8/8k1k/stp/max.yaml: ep-num-redundant-experts 32 "
           f"both sides, mem-fraction-static 0.75 / 0.82; {A2A_HEAD}"),
    Recipe("recipes/gb200-fp4/1k1k/max-tpt.yaml", None, None, ("0", "0.84", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb200-fp4/1k1k/max-tpt.yaml: ep-num-redundant-experts 32 "
           f"on the decode side only, mem-fraction-static 0.84 / 0.83; {A2A_HEAD}, decode side only"),
    Recipe("recipes/gb200-fp4/8k1k/mid-curve.yaml", None, None, ("0", "0.95", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb200-fp4/8k1k/mid-curve.yaml: ep-num-redundant-experts 32 "
           f"on the decode side only, mem-fraction-static 0.95 / 0.83; {A2A_HEAD}, decode side only"),
    Recipe("recipes/gb300-fp4/1k1k/max_tpt.yaml", None, None, ("0", "0.84", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb300-fp4/1k1k/max_tpt.yaml: ep-num-redundant-experts 32 "
           f"on the decode side only, mem-fraction-static 0.84 / 0.83; {A2A_HEAD}, decode side only"),
    Recipe("recipes/gb300-fp4/8k1k/mid_curve.yaml", None, None, ("0", "0.95", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb300-fp4/8k1k/mid_curve.yaml: ep-num-redundant-experts 32 "
           f"on the decode side only, mem-fraction-static 0.95 / 0.83; {A2A_HEAD}, decode side only"),
    # the rest read in full at the fork revision; DeepSeek FP8 DEP prefill and DEP8 / DEP32 decode
    Recipe("recipes/gb300-fp8/8k1k/stp/mid.yaml", None, None, ("32", "0.75", "deepep"), ("32", "0.82", "deepep"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb300-fp8/8k1k/stp/mid.yaml: {DEP_BOTH}, "
           f"mem-fraction-static 0.75 / 0.82; {MAIN_0207}"),
    Recipe("recipes/gb300-fp8/1k1k/stp/mid.yaml", None, None, ("32", "0.75", "deepep"), ("32", "0.82", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb300-fp8/1k1k/stp/mid.yaml: {DEP_BOTH}, "
           f"mem-fraction-static 0.75 / 0.82; {MAIN_0207}"),
    Recipe("recipes/gb300-fp8/1k1k/stp/max.yaml", None, None, ("32", "0.75", "deepep"), ("32", "0.82", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb300-fp8/1k1k/stp/max.yaml: {DEP_BOTH}, "
           f"mem-fraction-static 0.75 / 0.82; {MAIN_0207}"),
    Recipe("recipes/gb200-fp8/8k1k/mid-curve.yaml", None, None, ("32", "0.80", "deepep"), ("32", "0.82", "deepep"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb200-fp8/8k1k/mid-curve.yaml: {DEP_BOTH}, "
           f"mem-fraction-static 0.80 / 0.82; {MAIN_0207}"),
    Recipe("recipes/gb200-fp8/1k1k/max-tpt.yaml", None, None, ("32", "0.75", "deepep"), ("32", "0.82", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb200-fp8/1k1k/max-tpt.yaml: {DEP_BOTH}, "
           f"mem-fraction-static 0.75 / 0.82; {MAIN_0207}"),
    Recipe("recipes/gb200-fp8/1k1k/ultra-tpt.yaml", None, None, ("32", "0.75", "deepep"), ("32", "0.82", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb200-fp8/1k1k/ultra-tpt.yaml: {DEP_BOTH}, "
           f"mem-fraction-static 0.75 / 0.82; {MAIN_0207}"),
    # DeepSeek FP4: TP4 (8k1k) or DEP4 (1k1k) prefill without DeepEP, DEP32 decode with it
    Recipe("recipes/gb200-fp4/1k1k/mid-curve.yaml", None, None, ("0", "0.84", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb200-fp4/1k1k/mid-curve.yaml: {DEP_DECODE}, "
           f"mem-fraction-static 0.84 / 0.83; {MAIN_0207}"),
    Recipe("recipes/gb200-fp4/8k1k/max-tpt.yaml", None, None, ("0", "0.95", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb200-fp4/8k1k/max-tpt.yaml: {DEP_DECODE}, "
           f"mem-fraction-static 0.95 / 0.83; {MAIN_0207}"),
    Recipe("recipes/gb300-fp4/1k1k/mid_curve.yaml", None, None, ("0", "0.84", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb300-fp4/1k1k/mid_curve.yaml: {DEP_DECODE}, "
           f"mem-fraction-static 0.84 / 0.83; {MAIN_0211}"),
    Recipe("recipes/gb300-fp4/8k1k/max_tpt.yaml", None, None, ("0", "0.95", "none"), ("32", "0.83", "deepep"),
           "read", f"{SRT} (revision ab586514) recipes/gb300-fp4/8k1k/max_tpt.yaml: {DEP_DECODE}, "
           f"mem-fraction-static 0.95 / 0.83; {MAIN_0211}"),
    # low-latency recipes: TP prefill and TP decode workers, neither with redundant slots nor DeepEP
    Recipe("recipes/gb300-fp8/1k1k/stp/low-latency.yaml", None, None, ("0", "0.95", "none"), ("0", "0.85", "none"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb300-fp8/1k1k/stp/low-latency.yaml: {TP_BOTH}, "
           f"mem-fraction-static 0.95 / 0.85; {MAIN_0207}", recv=RECV_10_1),
    Recipe("recipes/gb300-fp8/8k1k/stp/low-latency.yaml", None, None, ("0", "0.95", "none"), ("0", "0.85", "none"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb300-fp8/8k1k/stp/low-latency.yaml: {TP_BOTH}, "
           f"mem-fraction-static 0.95 / 0.85; {MAIN_0207}", recv=RECV_10_1),
    Recipe("recipes/gb200-fp8/8k1k/low-latency.yaml", None, None, ("0", "0.8", "none"), ("0", "0.8", "none"),
           "read", f"{SRT} (revision ab586514) recipes/gb200-fp8/8k1k/low-latency.yaml: {TP_BOTH}, "
           "mem-fraction-static 0.8 / 0.8; the same in NVIDIA/srt-slurm main of the run's day (b2c9f1a4) and "
           "5063eb43 (04ff0a0a later passes 0.6 / 0.7)", recv=RECV_10),
    Recipe("recipes/gb200-fp4/1k1k/low-latency.yaml", None, None, ("0", "0.95", "none"), ("0", "0.95", "none"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb200-fp4/1k1k/low-latency.yaml: {TP_BOTH}, "
           f"mem-fraction-static 0.95 / 0.95; {MAIN_0207}", recv=RECV_10),
    Recipe("recipes/gb200-fp4/8k1k/low-latency.yaml", None, None, ("0", "0.95", "none"), ("0", "0.95", "none"),
           "read", f"{SRT} (revision ab586514) recipes/gb200-fp4/8k1k/low-latency.yaml: {TP_BOTH}, "
           f"mem-fraction-static 0.95 / 0.95; {MAIN_0207}", recv=RECV_10),
    Recipe("recipes/gb300-fp4/1k1k/low_latency.yaml", None, None, ("0", "0.95", "none"), ("0", "0.95", "none"),
           "read", f"{SRT} (revision ab586514) recipes/gb300-fp4/1k1k/low_latency.yaml: {TP_BOTH}, "
           f"mem-fraction-static 0.95 / 0.95; {MAIN_0211}", recv=RECV_10),
    Recipe("recipes/gb300-fp4/8k1k/low_latency.yaml", None, None, ("0", "0.95", "none"), ("0", "0.95", "none"),
           "read", f"{SRT} (revision f64d2b9f) recipes/gb300-fp4/8k1k/low_latency.yaml: {TP_BOTH}, "
           f"mem-fraction-static 0.95 / 0.95; {MAIN_0211}", recv=RECV_10),
)


def _matches(recipe: Recipe, ref: str, isl: int, decode_gpus: int) -> bool:
    return recipe.ref in ref and recipe.isl in (None, isl) and recipe.decode_gpus in (None, decode_gpus)


def _one(ref: str, isl: int, decode_gpus: int) -> Recipe | None:
    """The entry of one configuration (the most specific when several hold it)."""
    found = [r for r in RECIPES if _matches(r, ref, isl, decode_gpus)]
    found.sort(key=lambda r: (r.isl is None, r.decode_gpus is None))
    return found[0] if found else None


def recipe_cells(row: dict[str, str]) -> dict[str, str]:
    """The recipe cells of a written row (`CELLS`, module docstring); empty where its recipes do not establish them."""
    empty = dict.fromkeys(CELLS, "")
    if row.get("plan_status") == "unsettled" or row.get("engine") != "sglang" or not row.get("config_ref"):
        return empty
    gpus = 1
    for k in ("tp", "attention_dp", "pp"):
        gpus *= int(row.get(f"decode_{k}") or 1)
    found = [_one(ref, int(row["input_len"]), gpus) for ref in row["config_ref"].split(" | ")]
    if any(r is None for r in found) or len({(r.prefill, r.decode, r.recv) for r in found if r is not None}) != 1:
        return empty
    r = found[0]
    assert r is not None
    return dict(zip(CELLS, (*r.prefill, *r.decode, *r.recv), strict=True))
