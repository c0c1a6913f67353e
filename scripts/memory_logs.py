"""Print the memory model beside public engine start-up logs (tests/data/logs/logs.json).

    python -m scripts.memory_logs [--update [FILE]]

Each log is replayed with the conditions it states (model, GPU, plan, engine release, utilisation, max model
length, KV dtype) through `advisor.cost.memory.memory_fit`, and compared on what it prints: the KV tokens
("GPU KV cache size", times the decode-context-parallel size as vLLM prints it), else the KV memory, else fit /
no fit. Also the constants of `advisor/cost/budget.py` refitted from the logs that measured the terms, and each
of those logs predicted with constants refitted without it (leave one out).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.cost.budget import FITTED
from research.logcheck import (
    TOLERANCE,
    Replay,
    StartupLogEntry,
    fit_constants,
    leave_one_out,
    load_logs,
    replay,
)
from scripts.readme_block import home, replace_block

REPO = Path(__file__).resolve().parents[1]

LOGS = REPO / "tests" / "data" / "logs" / "logs.json"
GiB = 2**30


def _value(metric: str, v: float | None) -> str:
    if v is None:
        return "-"
    if metric == "fit":
        return "fits" if v else "does not fit"
    return f"{v:,.0f}" if metric == "tokens" else f"{v:.2f} GiB"


def _plan(e: StartupLogEntry) -> str:
    label = "+".join(f"{k.upper()}{v}" for k, v in e.plan.items() if v > 1) or "TP1"
    return label + (f" DCP{e.dcp}" if e.dcp > 1 else "")


def _row(e: StartupLogEntry, r: Replay) -> str:
    err = "-" if r.error is None else f"{r.error:+.1%}"
    if r.holds is None:
        verdict = f"not predicted: {e.not_predicted}"
    elif r.holds:
        verdict = f"within {TOLERANCE:.0%}" if r.metric != "fit" else "same fit verdict"
        verdict += f"; {e.note}" if e.note else ""
    else:
        verdict = f"misses: {e.miss}"
    same = e.checkpoint == e.model or e.model.startswith("tests/")
    model = e.checkpoint if same else f"{e.checkpoint} (as {e.model})"
    return (f"| {e.id} | {model} | {e.gpu} | {_plan(e)} | {e.engine} {e.engine_version} | "
            f"{_value(r.metric, r.logged)} | {_value(r.metric, r.predicted)} | {err} | {verdict} |")


def table(entries: list[StartupLogEntry]) -> str:
    """The docs/accuracy.md block: every log beside its prediction, the fitted constants and their leave-one-out."""
    replays = [replay(e, REPO) for e in entries]
    predicted = [r for r in replays if r.holds is not None]
    held = sum(1 for r in predicted if r.holds)
    refit = fit_constants(entries, REPO)
    loo = leave_one_out(entries, REPO)
    out = [
        f"Public start-up logs beside `advisor`'s memory model (`scripts/memory_logs.py`, data and sources in "
        f"`tests/data/logs/`): {held} of {len(predicted)} predicted logs within {TOLERANCE:.0%} on the KV cache "
        f"the engine prints (tokens, or GiB where the log gives no token count) or with the same fit verdict; "
        f"{len(replays) - len(predicted)} collected logs are not predicted, with the reason.",
        "",
        "| Log | Model | GPU | Plan | Engine release | Logged | Predicted | Error | Verdict |",
        "|---|---|---|---|---|---:|---:|---:|---|",
        *(_row(e, r) for e, r in zip(entries, replays, strict=True)),
        "",
        "Constants no engine file states (`advisor/cost/budget.py:FITTED`), fitted once on the logs that measured "
        f"the terms (llm-d, vLLM v0.11.0, H100: {', '.join(loo)}): sort temporaries "
        f"{FITTED.sort_temp_bytes:.2f} B per sampler element (refit {refit.sort_temp_bytes:.2f}), non-torch at "
        f"TP1 {FITTED.non_torch_base_bytes / GiB:.4f} GiB (refit {refit.non_torch_base_bytes / GiB:.4f}), NCCL "
        f"buffers {FITTED.nccl_peer_bytes / GiB:.4f} GiB per peer GPU (refit {refit.nccl_peer_bytes / GiB:.4f}). "
        "Every other log above is out of sample. Leave one out (refit without the log, then predict it): "
        + ", ".join(f"{k} {v.error:+.1%}" for k, v in loo.items() if v.error is not None) + ".",
    ]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", type=Path, nargs="?", const=home("memory-logs"), metavar="FILE",
                    help="write the table between the memory-logs markers of FILE (default: docs/accuracy.md)")
    args = ap.parse_args()
    body = table(load_logs(LOGS))
    print(body, end="")
    if args.update:
        replace_block(args.update, "memory-logs", body)


if __name__ == "__main__":
    main()
