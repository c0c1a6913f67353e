"""Write tests/data/bench/silicon_disagg_dev.csv: the measured disaggregated runs with the deployment each ran.

    python -m scripts.recover_disagg <shared silicon_disagg_dev.csv> \
        --silicon-sample <aiconfigurator silicon_sample.csv> -o tests/data/bench/silicon_disagg_dev.csv

Reads the shared copy (1,085 rows, aiconfigurator `silicon_sample.csv` `mode=disagg`), the source's
`silicon_data_source` of each row by its id (`--silicon-sample`: aiconfigurator's
aic-core/src/aiconfigurator_core/systems/silicon_sample.csv at 095f58a5; only the rows named here are read), the
InferenceX configurations table (`--configs`, written by `scripts.inferencex_disagg_configs`) and the ids of the
GB200 runs the source stores as aggregated with tp = all GPUs (`--rack-ids`; they were rows of silicon_dev.csv, see
tests/data/bench/README.md). Prints the counts by status and rule to stderr. Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

from advisor.calibrate.disagg_columns import COLUMNS
from research.disagg_recipes import recipe_cells
from research.disagg_recover import PLAN, SIDES, provenance, read_configs
from research.disagg_rows import assign_spec_pairs, mark_repeats, output_row, resolve, share_spec_with_repeats

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "bench"
_ID = "id="


def _number(value: str, digits: int) -> str:
    """The source's float as the shared copy writes it: rounded, no trailing zeros."""
    return f"{round(float(value), digits):.{digits}f}".rstrip("0").rstrip(".")


def rack_row(src: dict[str, str]) -> dict[str, str]:
    """A GB200 run the source stores as `mode=agg` with tp_size = every GPU of the deployment, in the shared
    disaggregated schema: both sides carry the stored cells (`disagg_recover.metadata_cells`, encoding `total`)."""
    cells = {k: src[f"{k}_size"] for k in ("tp", "pp", "attention_dp", "moe_tp", "moe_ep")}
    prov = provenance(src["silicon_data_source"])
    row = {"model": src["model_path"], "hardware": src["system"], "engine": src["backend"],
           "engine_version": src["backend_version"],
           "weight_dtype": "nvfp4" if src["precision"] == "fp4" else src["precision"],
           "concurrency": prov.get("silicon_concurrency", src["batch_size"]), "input_len": src["isl"],
           "output_len": src["osl"], "ttft_ms": _number(src["silicon_ttft_ms"], 3),
           "tpot_ms": _number(src["silicon_tpot_ms"], 4),
           "source": f"ai-dynamo/aiconfigurator silicon_sample.csv id={src['id']}"}
    for side in SIDES:
        row |= {f"{side}_workers": "", f"{side}_batch": ""} | {f"{side}_{k}": cells[k] for k in PLAN}
    return row


def read_inputs(args: argparse.Namespace) -> tuple[list[dict[str, str]], dict[str, dict[str, str]]]:
    """The shared rows plus the rack rows, each with its source id under `_id`, and the source row of every id."""
    with open(args.shared, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rack_ids = [line.strip() for line in args.rack_ids.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    for r in rows:
        if _ID not in r.get("source", ""):
            raise ValueError(f"{args.shared}: a row without an aiconfigurator id in source: {r.get('source')!r}")
        r["_id"] = r["source"].split(_ID, 1)[1]
    wanted = {r["_id"] for r in rows} | set(rack_ids)
    with open(args.silicon_sample, newline="", encoding="utf-8") as fh:
        src = {r["id"]: r for r in csv.DictReader(fh) if r["id"] in wanted}
    missing = sorted(wanted - src.keys())
    if missing:
        raise ValueError(f"{args.silicon_sample}: {len(missing)} ids not found, e.g. {missing[0]}")
    for rid in rack_ids:
        rows.append({**rack_row(src[rid]), "_id": rid})
    return rows, src


def write(rows: list[dict[str, str]], path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    """Recover, write, report counts; exit 2 with one line on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shared", type=Path, help="the shared silicon_disagg_dev.csv")
    parser.add_argument("--silicon-sample", type=Path, required=True, help="aiconfigurator's silicon_sample.csv")
    parser.add_argument("--configs", type=Path, default=DATA / "inferencex_disagg_configs.csv")
    parser.add_argument("--rack-ids", type=Path, default=DATA / "rack_disagg_ids.txt")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        rows, src = read_inputs(args)
        entries = read_configs(args.configs)
    except (OSError, ValueError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    provs = {rid: provenance(r["silicon_data_source"]) for rid, r in src.items()}
    resolutions = resolve(rows, provs, entries)
    out = [output_row(r, provs[r["_id"]], res) for r, res in zip(rows, resolutions, strict=True)]
    for r in out:
        r |= recipe_cells(r)
    mark_repeats(out, [r["_id"] for r in rows])
    paired = assign_spec_pairs(out, resolutions)
    shared = share_spec_with_repeats(out, [r["_id"] for r in rows])
    write(out, args.output)
    counts = Counter((r["plan_status"], r["plan_rule"]) for r in out)
    print(f"{len(out)} rows -> {args.output}", file=sys.stderr)
    for (status, rule), n in sorted(counts.items()):
        print(f"  {n:5d}  {status:10s} {rule}", file=sys.stderr)
    print(f"  {sum(1 for r in out if r['repeat_of']):5d}  repeats of another row's run", file=sys.stderr)
    print(f"  {paired:5d}  speculative decoding from the pair of runs at one point", file=sys.stderr)
    print(f"  {shared:5d}  speculative decoding from another copy of the same run", file=sys.stderr)
    print(f"  {sum(1 for r in out if r['decode_redundant_experts'] not in ('', '0')):5d}  redundant expert slots "
          "from the recipe", file=sys.stderr)
    for spec, n in sorted(Counter(r["spec_decoding"] or "unknown" for r in out).items()):
        print(f"  {n:5d}  spec_decoding {spec}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
