"""Resolve every measured disaggregated row to the deployment it ran (`resolve`) and write it in the repository's
disaggregated schema (`advisor/calibrate/disagg_columns.py`); the rules are in `research.disagg_recover`.

Order of the rules, per row:
1. `recorded`: the source records worker counts (its cells are the plan as deployed, batches as it defines them).
2. `same-run`: another row of the file is the same run (same hardware, engine, lengths, concurrency, TTFT and TPOT
   to the source's last digit; the source stores some runs twice, once from NVIDIA's database dump with worker
   counts, once from InferenceX's result files without) and records them: its deployment.
3. `config`: exactly one deployment (pools, worker counts) among the InferenceX configurations that can have
   produced the row (`disagg_recover.candidates`).
4. `unsettled`: none, or several; the reason names them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from research.disagg_recover import (
    GPUS_PER_NODE,
    PLAN,
    SIDES,
    Entry,
    Side,
    candidates,
    decode_batch,
    engine_release,
    side_of_cells,
)


@dataclass
class Resolution:
    """A row's deployment, how it was found, and the configurations that agree with it."""

    status: str  # recorded | recovered | unsettled
    rule: str  # source | same-run | config | (unsettled: no-config | several-configs)
    note: str = ""
    pools: tuple[Side, Side] | None = None
    matches: list[tuple[Entry, int, str]] = field(default_factory=list)


def run_key(row: dict[str, str]) -> tuple[str, ...]:
    """What identifies one measured run among the source's copies of it."""
    return tuple(row[k] for k in ("hardware", "engine", "input_len", "output_len", "concurrency", "ttft_ms",
                                  "tpot_ms"))


def _describe(pools: tuple[Side, Side]) -> str:
    def one(s: Side) -> str:
        kind = "DEP" if s.dp_attn else ("TEP" if s.ep > 1 else "TP")
        return f"{s.workers}x {kind}{s.gpus}" + ("" if s.dp_attn or s.ep in (1, s.gpus) else f" EP{s.ep}")
    return f"prefill {one(pools[0])}, decode {one(pools[1])}"


def _recorded(row: dict[str, str], prov: dict[str, str], entries: list[Entry]) -> Resolution:
    """Rule 1, with one correction: the GB200 SGLang rows of configurations whose InferenceX metadata still had the
    placeholder `ep: 1` (before #486, 2026-01-19) are recorded with moe_ep 1 and moe_tp = all GPUs of the worker;
    their workers ran DeepEP over all of them (`tp-size = dp-size = N`, `--enable-deepep-moe`, Dynamo
    slurm_jobs/scripts/gb200-fp8.sh; #486: "EP = (NODES x 4 GPUs) / num-workers"). Such a row takes the EP of the
    one configuration that holds it with the same workers, GPUs and attention DP."""
    pools = (side_of_cells(row, "prefill"), side_of_cells(row, "decode"))
    if not row["concurrency"]:
        return Resolution("recorded", "source", "", pools)
    found = candidates(row, prov, entries, pools)
    if found or row["engine"] != "sglang":
        return Resolution("recorded", "source", "", pools, found)
    loose = [m for m in candidates(row, prov, entries, None, strict=False)
             if all((a.workers, a.gpus, a.dp_attn) == (b.workers, b.gpus, b.dp_attn)
                    for a, b in zip((m[0].prefill, m[0].decode), pools, strict=True))]
    fixed = {(e.prefill, e.decode) for e, _, _ in loose}
    if len(fixed) == 1 and all(s.ep == 1 for s in pools):
        return Resolution("recorded", "source-ep", "moe cells as deployed: the source's moe_ep 1 / moe_tp = GPUs is "
                          "InferenceX's placeholder ep: 1 (before #486); the workers ran DeepEP over all GPUs",
                          next(iter(fixed)), loose)
    return Resolution("recorded", "source", "", pools, found)


def resolve_one(row: dict[str, str], prov: dict[str, str], entries: list[Entry],
                twins: dict[tuple[str, ...], tuple[str, Resolution]]) -> Resolution:
    """Rules 2-4 (module docstring) for a row that records no worker counts."""
    twin = twins.get(run_key(row))
    if twin is not None and twin[1].pools is not None:
        pools = twin[1].pools
        found = candidates(row, prov, entries)
        found = [m for m in found if (m[0].prefill, m[0].decode) == pools] or twin[1].matches
        return Resolution("recovered", "same-run", f"same run as {twin[0]}, which records it", pools, found)
    found = candidates(row, prov, entries)
    deployments = {(e.prefill, e.decode) for e, _, _ in found}
    if len(deployments) == 1:
        pools = next(iter(deployments))
        return Resolution("recovered", "config", "", pools, found)
    if not found:
        return Resolution("unsettled", "no-config", f"no InferenceX configuration in force on {prov['measured']} "
                          f"(-1/+7 days) holds {row['input_len']}x{row['output_len']} at {row['concurrency']} users "
                          "with this image and these cells")
    listed = "; ".join(sorted(_describe(d) for d in deployments))
    return Resolution("unsettled", "several-configs", f"{len(deployments)} InferenceX deployments hold this point: "
                      f"{listed}", None, found)


def resolve(rows: list[dict[str, str]], provs: dict[str, dict[str, str]],
            entries: list[Entry]) -> list[Resolution]:
    """Every row's resolution, in file order (rows carry their source id under `_id`): the recorded rows first, so
    that their copies take the deployment as corrected."""
    out: dict[int, Resolution] = {}
    twins: dict[tuple[str, ...], tuple[str, Resolution]] = {}
    for i, r in enumerate(rows):
        if r["prefill_workers"] and r["decode_workers"]:
            out[i] = _recorded(r, provs[r["_id"]], entries)
            if r["concurrency"]:
                twins.setdefault(run_key(r), (r["_id"], out[i]))
    for i, r in enumerate(rows):
        if i not in out:
            out[i] = resolve_one(r, provs[r["_id"]], entries, twins)
    return [out[i] for i in range(len(rows))]


def _spec(res: Resolution) -> tuple[str, str, str]:
    """(spec_decoding, spec_tokens, note) agreed by every matching configuration; empty where they disagree."""
    specs = {(e.spec, e.spec_tokens) for e, _, _ in res.matches}
    if len(specs) == 1:
        spec, tokens = next(iter(specs))
        return spec, tokens, ""
    if len({s for s, _ in specs}) == 1:
        return next(iter(specs))[0], "", "draft length differs between the matching configurations"
    if specs:
        return "", "", "speculative decoding unsettled: configurations with and without MTP hold this point"
    return "", "", ""


def _refs(res: Resolution) -> str:
    return " | ".join(sorted({e.ref for e, _, _ in res.matches}))


def plan_columns(row: dict[str, str], res: Resolution) -> dict[str, str]:
    """Worker counts, plan cells, batches, GPUs and nodes of a resolved row (the source's where recorded)."""
    out: dict[str, str] = {}
    if res.pools is None:
        return {f"{s}_{k}": "" for s in SIDES for k in ("workers", *PLAN, "batch")} | {"total_gpus": "", "nodes": ""}
    for name, side in zip(SIDES, res.pools, strict=True):
        cells = ({k: row[f"{name}_{k}"] for k in PLAN} if res.rule == "source"
                 else {k: str(v) for k, v in side.cells().items()})
        out |= {f"{name}_workers": str(side.workers), **{f"{name}_{k}": v for k, v in cells.items()}}
    if res.status == "recorded":
        out |= {"prefill_batch": row["prefill_batch"], "decode_batch": row["decode_batch"]}
    else:
        out |= {"prefill_batch": "1", "decode_batch": str(decode_batch(int(row["concurrency"]), res.pools[1]))}
    gpn = GPUS_PER_NODE[row["hardware"]]
    out["total_gpus"] = str(sum(s.workers * s.gpus for s in res.pools))
    out["nodes"] = str(sum(s.workers * -(-s.gpus // gpn) for s in res.pools))
    return out


def client_length_ratio(source_id: str) -> str:
    """How the run's benchmark client drew lengths (the `length_ratio` column, as for the aggregated rows,
    tests/data/bench/README.md): InferenceX's runs (ids `dsr1_*` from its database dump, dated `YYYY_MM_DD_*` from its
    result files) ran sa-bench / `benchmark_serving.py` at `--random-range-ratio 0.8`; the others are NVIDIA's
    aic-auto-gap-analysis runs, aiperf at the stated lengths."""
    return "0.8" if source_id.startswith("dsr1_") or re.match(r"20\d\d_\d\d_\d\d_", source_id) else "1"


def output_row(row: dict[str, str], prov: dict[str, str], res: Resolution) -> dict[str, str]:
    """One row of the repository's disaggregated CSV (columns of `disagg_columns.COLUMNS`, `repeat_of` later)."""
    image = prov.get("image", "")
    if not image and res.matches and len({e.image for e, _, _ in res.matches}) == 1:
        image = res.matches[0][0].image
    ran = {e.ran_image for e, _, _ in res.matches}
    engine_version, dynamo, engine_note = engine_release(row, image, ran.pop() if len(ran) == 1 else "")
    spec, tokens, spec_note = _spec(res)
    encodings = {enc for _, _, enc in res.matches} & set(_ENCODING)
    cell_note = _ENCODING[encodings.pop()] if len(encodings) == 1 and res.rule != "source" else ""
    notes = "; ".join(n for n in (res.note if res.status != "unsettled" else "", cell_note, spec_note, engine_note)
                      if n)
    cells = "" if res.rule == "source" else " ".join(
        f"{s}=" + "/".join(row[f"{s}_{k}"] for k in PLAN) for s in SIDES)
    keep = ("model", "hardware", "engine", "weight_dtype", "concurrency", "input_len", "output_len", "ttft_ms",
            "tpot_ms", "source")
    return {**{k: row[k] for k in keep}, **plan_columns(row, res), "engine_version": engine_version,
            "length_ratio": client_length_ratio(row["source"].split("id=", 1)[-1]),
            "dynamo_version": dynamo, "spec_decoding": spec, "spec_tokens": tokens, "plan_status": res.status,
            "plan_rule": res.rule, "unsettled_reason": res.note if res.status == "unsettled" else "",
            "notes": notes, "config_ref": _refs(res), "image": image, "measured": prov.get("measured", ""),
            "source_cells": cells, "repeat_of": ""}


_RANK = {"recorded": 0, "recovered": 1, "unsettled": 2}
_ENCODING = {"metadata": "source cells: InferenceX's prefill tp / ep and decode tp",
             "total": "source cells: tp = every GPU of the deployment"}


def mark_repeats(rows: Iterable[dict[str, str]], ids: list[str]) -> None:
    """`repeat_of` on every copy of a run but one: the recorded copy, else a recovered one, else DeepSeek-R1's
    label over DeepSeek-V3's (the source files R1 runs under both names), else the first."""
    groups: dict[tuple[str, ...], list[tuple[int, dict[str, str]]]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[run_key(r)].append((i, r))
    for copies in groups.values():
        if len(copies) < 2:
            continue
        keep = min(copies, key=lambda c: (_RANK[c[1]["plan_status"]], "DeepSeek-R1" not in c[1]["model"], c[0]))
        for _, r in copies:
            if r is not keep[1]:
                r["repeat_of"] = ids[keep[0]]


PAIR_RATIO = 1.15  # smallest TPOT ratio taken as drafting (the pairs the configurations settle: 1.19-1.58)
_POINT = ("hardware", "engine", "weight_dtype", "input_len", "output_len", "concurrency", "measured",
          *(f"{s}_{k}" for s in SIDES for k in ("workers", *PLAN)))


def assign_spec_pairs(out: list[dict[str, str]], resolutions: list[Resolution]) -> int:
    """Speculative decoding of runs measured twice at one point, once with MTP and once without: where the
    configurations that hold the point include both and the file has exactly two runs of it (same deployment,
    lengths, concurrency and day; repeats of one run excluded), the run with the TPOT lower by at least
    `PAIR_RATIO` drafted (MTP), the other did not. Drafting lowers TPOT: in the 7 pairs the configurations settle
    the MTP run's TPOT is 1.19-1.58x lower. Returns the rows assigned."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, r in enumerate(out):
        if r["prefill_workers"] and not r["repeat_of"]:
            groups[tuple(r[k] for k in _POINT)].append(i)
    done = 0
    for idx in groups.values():
        if len(idx) != 2 or any(out[i]["spec_decoding"] for i in idx):
            continue
        fast, slow = sorted(idx, key=lambda i: float(out[i]["tpot_ms"]))
        if float(out[slow]["tpot_ms"]) < PAIR_RATIO * float(out[fast]["tpot_ms"]):
            continue
        for i, spec in ((fast, "mtp"), (slow, "none")):
            tokens = {e.spec_tokens for e, _, _ in resolutions[i].matches if e.spec == spec}
            note = "speculative decoding from the pair of runs at this point (lower TPOT: mtp)"
            out[i] |= {"spec_decoding": spec, "spec_tokens": tokens.pop() if len(tokens) == 1 else "",
                       "notes": "; ".join(n for n in (note, *_other_notes(out[i]["notes"])) if n)}
            done += 1
    return done


def _other_notes(notes: str) -> list[str]:
    return [n for n in notes.split("; ") if n and not n.startswith("speculative decoding unsettled")]


def share_spec_with_repeats(out: list[dict[str, str]], ids: list[str]) -> int:
    """Copies of one run share its speculative decoding where one copy settles it and none contradicts it."""
    index = {rid: i for i, rid in enumerate(ids)}
    groups: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(out):
        groups[index[r["repeat_of"]] if r["repeat_of"] else i].append(i)
    done = 0
    for members in groups.values():
        known = {(out[i]["spec_decoding"], out[i]["spec_tokens"]) for i in members if out[i]["spec_decoding"]}
        if len(known) != 1:
            continue
        spec, tokens = known.pop()
        for i in members:
            if not out[i]["spec_decoding"]:
                out[i] |= {"spec_decoding": spec, "spec_tokens": tokens,
                           "notes": "; ".join(["speculative decoding of the same run's other copy",
                                               *_other_notes(out[i]["notes"])])}
                done += 1
    return done
