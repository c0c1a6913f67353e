"""Every fitted parameter of the cost model, with the rows that inform it and its bounds: the serving step's terms
(`advisor/calibrations/<engine>.json`, `advisor/cost/terms.py`), the kernel models (`advisor/cost/kernel_params.json`)
and the collective models (`advisor/hardware/nvswitch_params.json`, `wide_ep_params.json`). Nothing here is indexed
by model or concurrency band; the step terms' per-GPU deviations apply to the GPU they were fitted on only (a GPU
without rows, and every "GPU held out" figure, gets the engine-wide value).

    python -m scripts.fitted_terms [--update]   (prints the block; --update writes it into docs/accuracy.md)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from advisor.calibrate.base import ROW_KINDS
from advisor.calibrate.pooled import PooledCalibrator, _consistent
from advisor.calibrate.predict_table import prepare
from advisor.calibrate.rowtable import read_measurements
from advisor.calibrate.store import SHIPPED
from advisor.cost.terms import BOUNDS, Terms
from scripts.readme_block import home, replace_block
from scripts.refit_calibrations import files

REPO = Path(__file__).resolve().parents[1]
ENGINES = {"sglang": "SGLang", "trtllm": "TensorRT-LLM", "vllm": "vLLM"}
KERNELS = REPO / "advisor" / "cost" / "kernel_params.json"
COLLECTIVES = [REPO / "advisor" / "hardware" / f"{n}_params.json" for n in ("nvswitch", "wide_ep")]
INTRO = ("Every fitted parameter of the cost model, with the rows that inform it and its bounds. None is indexed by "
         "model or concurrency band. A step term's per-GPU value applies to the GPU it was fitted on only: a GPU "
         "without rows, and every \"GPU held out\" figure, takes the engine-wide value.")
# scripts/fit_kernels.py: fit (the bounds its least_squares is given)
KERNEL_BOUNDS = "efficiencies (`e_bw`, `e_f`) in (0, 1] of the spec sheet, `p` in [1, 20], the rest positive"


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def fitted_rows() -> dict[str, dict[str, int]]:
    """Per engine, per row kind (`calibrate/base.py: ROW_KINDS`): the rows its pooled fit learns from (the fit's
    files, less the rows it sets aside, `calibrate/pooled.py: _consistent`)."""
    rows = [r for f in files(REPO / "tests" / "data" / "bench") for r in read_measurements(f).rows]
    _, buckets = prepare(rows)
    kept, _ = _consistent(buckets)
    out: dict[str, dict[str, int]] = {}
    for (_, engine), b in kept.items():
        mine = out.setdefault(engine, dict.fromkeys(ROW_KINDS, 0))
        for kind, (_, test) in ROW_KINDS.items():
            mine[kind] += sum(1 for r in b.rows if test(r))
    return out


def step_terms(counts: dict[str, dict[str, int]]) -> list[str]:
    """One line per step term: what it stands for, the rows that inform it per engine, prior, bounds, and the
    engine-wide value with the range over the GPUs fitted."""
    shipped = {e: json.loads((SHIPPED / f"{e}.json").read_text(encoding="utf-8")) for e in ENGINES}
    head = ("| term | stands for | rows that inform it (" + " / ".join(ENGINES.values()) + ") | prior | bounds | "
            + " | ".join(f"{v}: engine-wide (per GPU)" for v in ENGINES.values()) + " |")
    out = [head, "|" + "---|" * (5 + len(ENGINES))]
    for name, field in Terms.model_fields.items():
        kind = PooledCalibrator.informs[name]
        what = ROW_KINDS[kind][0]
        n = " / ".join(f"{counts.get(e, {}).get(kind, 0):,}" for e in ENGINES)
        lo, hi = BOUNDS[name]
        cells = []
        for e in ENGINES:
            fit = shipped[e]
            per = [h["terms"][name] for h in fit["hardware"].values() if name in h.get("deviations", {})]
            span = f" ({_num(min(per))}-{_num(max(per))}, {len(per)} GPUs)" if per else ""
            hit = " at bound" if name in fit.get("bounds_hit", []) else ""
            kept = " prior kept" if name in fit.get("refused", {}) else ""
            cells.append(f"{_num(fit['engine_wide'][name])}{span}{hit}{kept}")
        doc = (field.description or "").split(". ")[0].split(" (")[0].rstrip(".")
        out.append(f"| `{name}` | {doc} | {what}: {n} | {_num(field.default)} | {_num(lo)}-{_num(hi)} | "
                   + " | ".join(cells) + " |")
    return out


def kernel_terms() -> list[str]:
    """One line per kernel model: its parameter sets (what they are keyed by), the parameters of each set and the
    shared ones, and the kernel rows fitted."""
    params: dict[str, Any] = json.loads(KERNELS.read_text(encoding="utf-8"))
    out = ["| kernel model | parameter sets, keyed by | parameters per set | shared | rows fitted |",
           "|---|---|---|---|---:|"]
    for model, p in params.items():
        if not isinstance(p, dict):
            continue
        by = next(k for k in p if k.startswith("by_"))
        sets = p[by]
        per = sorted({n for s in sets.values() for n in s})
        shared = [k for k, v in p.items() if isinstance(v, float)]
        rows = p.get("in_sample", {}).get("n")
        out.append(f"| `{model}` | {len(sets)}, by {by[3:]} | {', '.join(f'`{n}`' for n in per)} | "
                   f"{', '.join(f'`{n}`' for n in shared) or '-'} | {'-' if rows is None else f'{rows:,}'} |")
    return out


def collective_terms() -> list[str]:
    """The collective models' fitted files: what each was fitted on (its `source`)."""
    out = []
    for path in COLLECTIVES:
        src = json.loads(path.read_text(encoding="utf-8"))["source"]
        out.append(f"- `{path.relative_to(REPO).as_posix()}`: {src}.")
    return out


def main() -> int:
    text = "\n".join([
        "Written by `python -m scripts.fitted_terms --update`; do not edit by hand. " + INTRO,
        "",
        "Serving step terms (`advisor/cost/terms.py`), fitted per engine over every GPU of its rows "
        f"(`advisor/calibrate/pooled.py`); a term with fewer than {min(PooledCalibrator.min_rows.values())} informing "
        "rows keeps its prior:",
        "", *step_terms(fitted_rows()), "",
        f"Kernel models (`advisor/cost/kernel_params.json`, `scripts/fit_kernels.py`; bounds: {KERNEL_BOUNDS}), "
        "fitted on the measured kernel tables, shared by every GPU: one parameter set per format and the kernel the "
        "engine dispatches it to on a GPU generation (`cost/kernels.py: moe_family`, `attention_group`); the "
        "`int4_wo/wna16*` MoE sets time vLLM's WNA16 kernels and price no format (INT4 experts are priced by "
        "`marlin_moe`):",
        "", *kernel_terms(), "",
        "Collective models, fitted on measured collective tables (per NVLink generation or per exchange mode, not per "
        "GPU):", "", *collective_terms()])
    print(text)
    if sys.argv[1:2] == ["--update"]:
        replace_block(home("fitted-terms"), "fitted-terms", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
