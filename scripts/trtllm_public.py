"""`--engine trtllm` on the RTX PRO 6000 box against NVIDIA's published TensorRT-LLM max-load throughput there.

    python -m scripts.trtllm_public [--update [FILE]]

The rows are `tests/data/bench/public.csv`'s RTX PRO 6000 Server TensorRT-LLM ones (`docs/source/performance/
perf-overview.md`, three revisions; FP4 checkpoints, fixed lengths, `trtllm-bench throughput` with every request
queued at once) for the catalog's models. No TensorRT-LLM term was fitted on this GPU (the engine-wide terms
apply) and none is fitted here: the rows only judge the predictions. The concurrency is what the engine holds:
`trtllm-bench` queues everything and each request reserves its prompt plus output in the KV cache
(`guaranteed_no_evict`), so the KV tokens the memory model gives over (input + output). The doc runs MoE models
with attention DP (its `llm_options.yml`: `enable_attention_dp`; later revisions call the plans DEPn), so a MoE
row at TP n is predicted as n attention-DP ranks with EP n. NVIDIA's FP4 exports keep an FP8 KV cache.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from advisor.calibrate.store import terms_for
from advisor.catalog import lookup
from advisor.cost.plan import Plan
from advisor.cost.sweep import evaluate, make_case
from advisor.cost.workload import Settings
from advisor.hardware import load_profile
from scripts.readme_block import home, replace_block

REPO = Path(__file__).resolve().parents[1]

PUBLIC = REPO / "tests" / "data" / "bench" / "public.csv"
HW = "rtx-pro-6000-server"
# the doc's model names -> the catalog's configs (Llama-3.1-405B is not in the catalog)
MODELS = {"Llama-3.3-70B-Instruct": "meta-llama/Llama-3.3-70B-Instruct", "Qwen3-30B-A3B": "Qwen/Qwen3-30B-A3B",
          "Qwen3-235B-A22B": "Qwen/Qwen3-235B-A22B",
          "Llama-4-Scout-17B-16E-Instruct": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
          "Llama-4-Maverick-17B-128E-Instruct": "meta-llama/Llama-4-Maverick-17B-128E-Instruct"}


@dataclass(frozen=True)
class Row:
    model: str  # catalog id
    revision: str  # the doc revision (engine_version cell)
    plan: Plan
    input_len: int
    output_len: int
    measured: float  # total output tok/s
    users: int = 0  # what the KV cache holds (0: the plan does not run)
    predicted: float | None = None
    reason: str | None = None

    @property
    def kind(self) -> str:
        if self.plan.gpus == 1:
            return "1 GPU"
        if self.plan.pp > 1:
            return f"PP{self.plan.pp}" if self.plan.tp * self.plan.dp == 1 else f"TP/DEP x PP{self.plan.pp}"
        return "DEP" if self.plan.dp > 1 else "TP"

    @property
    def error(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.measured - 1


def read_rows(path: Path = PUBLIC) -> list[Row]:
    """The RTX PRO 6000 TensorRT-LLM rows of the catalog's models, with the plan as the doc ran it."""
    out = []
    for r in csv.DictReader(path.open(encoding="utf-8")):
        if not (r["hardware"].startswith("RTX PRO 6000") and r["engine"] == "TensorRT-LLM" and r["model"] in MODELS):
            continue
        model = MODELS[r["model"]]
        entry = lookup(model)
        assert entry is not None, model
        tp, pp = int(r["tp"] or 1), int(r["pp"] or 1)
        moe = entry.arch.moe is not None and tp > 1
        plan = Plan(tp=1, pp=pp, dp=tp, ep=tp) if moe else Plan(tp=tp, pp=pp)
        out.append(Row(model, r["engine_version"], plan, int(r["input_len"]), int(r["output_len"]),
                       float(r["output_tok_s_total"])))
    return out


def predict(rows: list[Row]) -> list[Row]:
    """Each row at the concurrency its KV cache holds, with the shipped (engine-wide) TensorRT-LLM terms."""
    hw = load_profile(HW)
    terms, _ = terms_for(hw, "trtllm")
    done = []
    for row in rows:
        entry = lookup(row.model)
        assert entry is not None
        settings = Settings(engine="trtllm", weight_dtype="nvfp4", kv_cache_dtype="fp8",
                            max_model_len=row.input_len + row.output_len)
        case = make_case(entry.arch, row.plan, hw, settings)
        if not case.runs or case.memory is None:
            done.append(replace(row, reason=case.reason))
            continue
        users = case.memory.kv_cache_tokens // (row.input_len + row.output_len)
        sweep = evaluate([case], terms, np.array([users]), np.array([row.input_len]),
                         np.array([row.output_len]), {})
        done.append(replace(row, users=users, predicted=sweep.at(0, users).output_tok_s))
    return done


def summary(rows: list[Row]) -> dict[str, tuple[int, float, float]]:
    """Per plan kind: (rows, median |error|, median signed error)."""
    kinds: dict[str, list[float]] = {}
    for r in rows:
        if r.error is not None:
            kinds.setdefault(r.kind, []).append(r.error)
    return {k: (len(v), statistics.median(abs(e) for e in v), statistics.median(v)) for k, v in kinds.items()}


def table(rows: list[Row]) -> str:
    order = ["1 GPU", "PP2", "PP4", "PP8", "DEP", "TP/DEP x PP2", "TP/DEP x PP4"]
    s = summary(rows)
    lines = ["| plan | rows | median abs. error | median signed error |", "|---|---:|---:|---:|"]
    for kind in sorted(s, key=lambda k: order.index(k) if k in order else len(order)):
        n, a, sg = s[kind]
        lines.append(f"| {kind} | {n} | {a:.0%} | {sg:+.0%} |")
    skipped = [r for r in rows if r.error is None]
    why = sorted({f"{r.model} {r.plan.label()}: {r.reason}" for r in skipped})
    lines += ["", f"{sum(n for n, _, _ in s.values())} of {len(rows)} rows predicted"
              + (f"; not predicted: {'; '.join(why)}" if why else "") + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", type=Path, nargs="?", const=home("trtllm-public"), metavar="FILE",
                    help="write the table between the trtllm-public markers of FILE (default: docs/accuracy.md)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every row")
    args = ap.parse_args()
    rows = predict(read_rows())
    if args.verbose:
        for r in rows:
            print(f"{r.model} {r.plan.label()} {r.input_len}/{r.output_len} {r.revision[:12]}: {r.users} users, "
                  f"measured {r.measured:,.0f}, predicted {r.predicted or 0:,.0f} ({(r.error or 0):+.0%})",
                  file=sys.stderr)
    body = table(rows)
    print(body, end="")
    if args.update:
        replace_block(args.update, "trtllm-public", body)


if __name__ == "__main__":
    main()
