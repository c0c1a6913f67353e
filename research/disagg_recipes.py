"""What a measured disaggregated run's recipe passed to its engine beyond the plan: SGLang's redundant expert slots
(`--ep-num-redundant-experts`, `arch/redundant.py`), memory fraction (`--mem-fraction-static`) and MoE all-to-all
(`--moe-a2a-backend deepep` or `--enable-deepep-moe`) on each side, for the `<side>_redundant_experts`,
`<side>_mem_fraction` and `<side>_moe_a2a` cells of silicon_disagg_dev.csv (`recipe_cells`).

A row takes them from the recipes its configurations ran (`config_ref`, one or more `file@commit key [recipe]`):
every configuration it names must have an entry below for its lengths and decode worker size, and the entries must
agree; otherwise the cells stay empty (not established: the engine's defaults are modelled). Each entry names the
recipe file read and how it is established: `read` (the flag in the recipe revision named) or `inferred` (the
revision the run pinned is not available; the value is the one every recipe of that family read passes, and for
EP48 the only one that forms: SGLang places experts + slots evenly over the EP ranks, so 256 experts over 48 ranks
need slots, `srt/eplb/expert_location.py`). tests/data/bench/README.md lists them with the rows they settle.
"""

from __future__ import annotations

from dataclasses import dataclass

CELLS = ("prefill_redundant_experts", "prefill_mem_fraction", "prefill_moe_a2a", "decode_redundant_experts",
         "decode_mem_fraction", "decode_moe_a2a")
ELNIFIO = ("Elnifio/dynamo update-result-file-name components/backends/sglang/slurm_jobs/scripts/gb200-fp8.sh "
           "(revision 0bf64d4c; ai-dynamo/dynamo 085194da the same flags): --ep-num-redundant-experts 32 and "
           "--enable-deepep-moe on both sides; --mem-fraction-static differs between revisions (prefill none or "
           "0.8), not recorded")
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


A2A_HEAD = ("moe-a2a-backend deepep as NVIDIA/srt-slurm 04ff0a0a has the same file (the fork revision the run "
            "pinned was read for the other flags)")
RECIPES: tuple[Recipe, ...] = (
    # Before 2025-12-05 InferenceX's own launcher ran Elnifio's Dynamo fork for every ISL (the rack-scale rows)
    Recipe("runners/launch_gb200-nv.sh@450d834a9 dsr1-fp8-gb200-dynamo-sglang", None, None,
           ("32", "", "deepep"), ("32", "", "deepep"), "read", ELNIFIO),
    # benchmarks/dsr1_fp8_gb200_dynamo-sglang_slurm.sh@93e1b3ca1: 8k1k clones Elnifio's fork, 1k1k the
    # ishan/sa-1.1-sgl-dsr1-fp8 branch of ai-dynamo/dynamo (1k1k-max-tpt or 1p_4d)
    Recipe("nvidia-master.yaml@93e1b3ca1 dsr1-fp8-gb200-dynamo-sglang", 8192, None,
           ("32", "", "deepep"), ("32", "", "deepep"), "read", ELNIFIO),
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
           "no ep-num-redundant-experts, no moe-a2a-backend, both sides"),
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
)


def _matches(recipe: Recipe, ref: str, isl: int, decode_gpus: int) -> bool:
    return recipe.ref in ref and recipe.isl in (None, isl) and recipe.decode_gpus in (None, decode_gpus)


def _one(ref: str, isl: int, decode_gpus: int) -> Recipe | None:
    """The entry of one configuration (the most specific when several hold it)."""
    found = [r for r in RECIPES if _matches(r, ref, isl, decode_gpus)]
    found.sort(key=lambda r: (r.isl is None, r.decode_gpus is None))
    return found[0] if found else None


def recipe_cells(row: dict[str, str]) -> dict[str, str]:
    """The four cells of a written row (module docstring); empty where its recipes do not establish them."""
    empty = dict.fromkeys(CELLS, "")
    if row.get("plan_status") == "unsettled" or row.get("engine") != "sglang" or not row.get("config_ref"):
        return empty
    gpus = 1
    for k in ("tp", "attention_dp", "pp"):
        gpus *= int(row.get(f"decode_{k}") or 1)
    found = [_one(ref, int(row["input_len"]), gpus) for ref in row["config_ref"].split(" | ")]
    if any(r is None for r in found) or len({(r.prefill, r.decode) for r in found if r is not None}) != 1:
        return empty
    r = found[0]
    assert r is not None
    return dict(zip(CELLS, (*r.prefill, *r.decode), strict=True))
