"""Public engine start-up logs replayed through the memory model (`tests/data/logs/logs.json`), and the one fit
of the budget's constants (`budget.Constants`) on the logs that measured the terms themselves.

A log is compared on what it prints: "GPU KV cache size" tokens (x the decode-context-parallel size, as vLLM
prints it), else "Available KV cache memory"; a failed start is compared on fit / no fit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from advisor.cost.budget import FITTED, Constants, peers
from advisor.cost.engine_args import EngineArgs
from advisor.cost.engine_args import resolve as engine_args
from advisor.cost.memory import MemoryFit, memory_fit
from advisor.cost.plan import Plan
from advisor.cost.weights import requantize
from advisor.cost.workload import Settings

GiB = 2**30
TOLERANCE = 0.10  # a prediction "holds" within 10% of the logged KV tokens (or KV memory)


class StartupLogEntry(BaseModel):
    """One collected log with the conditions it states (`tests/data/logs/README.md` describes the fields)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: str
    source: str
    date: str
    checkpoint: str  # what the log ran
    model: str  # what the prediction resolves: a catalog id or a config kept in tests/data/logs/configs
    model_note: str | None = None  # why `model` stands for `checkpoint`
    gpu: str  # as the log states it, x count
    hardware: str | None = None  # the hardware profile the prediction uses
    engine: str
    engine_version: str
    version_note: str | None = None
    plan: dict[str, int]
    dcp: int = 1
    settings: dict[str, Any]
    logged: dict[str, Any]
    measured_terms: dict[str, float] | None = None
    lines: list[str]
    note: str | None = None  # what else the comparison needs said
    miss: str | None = None  # why the prediction is known to miss
    not_predicted: str | None = None  # why no prediction is made


class Replay(BaseModel):
    """A log beside its prediction."""

    model_config = ConfigDict(frozen=True)

    id: str
    metric: str  # "tokens", "KV GiB" or "fit"
    logged: float | None
    predicted: float | None
    error: float | None  # (predicted - logged) / logged
    holds: bool | None  # within TOLERANCE, or the same fit / no-fit verdict; None when not predicted


def load_logs(path: Path) -> list[StartupLogEntry]:
    return [StartupLogEntry(**e) for e in json.loads(path.read_text(encoding="utf-8"))]


def case(entry: StartupLogEntry, repo: Path) -> tuple[Any, Plan, Any, EngineArgs]:
    """(arch, plan, hardware, resolved engine arguments) of a predicted log."""
    from advisor.hardware import load_profile
    from advisor.resolve import resolve

    ref = str(repo / entry.model) if entry.model.startswith("tests/") else entry.model
    arch = resolve(ref).arch
    settings = Settings(engine=entry.engine, engine_version=entry.engine_version,
                        **{k: v for k, v in entry.settings.items() if v is not None})
    assert entry.hardware is not None
    plan, hw = Plan(**entry.plan), load_profile(entry.hardware)
    return arch, plan, hw, engine_args(settings, arch, plan, hw)


def predict(entry: StartupLogEntry, repo: Path, consts: Constants = FITTED) -> MemoryFit:
    arch, plan, hw, args = case(entry, repo)
    return memory_fit(arch, plan, hw, args, requantize(arch, args.weight_dtype), consts)


def replay(entry: StartupLogEntry, repo: Path, consts: Constants = FITTED) -> Replay:
    """The log's printed quantity against the prediction of it."""
    if entry.not_predicted:
        return Replay(id=entry.id, metric="-", logged=None, predicted=None, error=None, holds=None)
    m = predict(entry, repo, consts)
    lg = entry.logged
    if lg.get("fits") is False or lg.get("available_kv_gib", 1) < 0:
        return Replay(id=entry.id, metric="fit", logged=0.0, predicted=float(m.fits), error=None, holds=not m.fits)
    if lg.get("kv_tokens"):
        logged, pred, metric = float(lg["kv_tokens"]), float(m.gpu_kv_cache_tokens * entry.dcp), "tokens"
    else:
        logged, pred, metric = float(lg["available_kv_gib"]), m.available_kv_bytes / GiB, "KV GiB"
    err = (pred - logged) / logged
    return Replay(id=entry.id, metric=metric, logged=logged, predicted=pred, error=err,
                  holds=abs(err) <= TOLERANCE)


def fit_constants(entries: list[StartupLogEntry], repo: Path) -> Constants:
    """Least squares on the logs with measured terms (llm-d): the profile's activation peak = rows x vocab x
    (18 + t) + hidden states, for t the sort temporaries (bytes per element); non-torch = base + per peer x
    peers, base from the TP1 rows, per peer from the rest."""
    rows = [e for e in entries if e.measured_terms and not e.not_predicted]
    n: list[float] = []
    y: list[float] = []
    base_rows: list[tuple[int, float]] = []
    peer_rows: list[tuple[int, float]] = []
    for e in rows:
        arch, plan, hw, args = case(e, repo)
        assert e.measured_terms is not None and args.engine_release().sampler == "sort", e.id
        tokens = args.max_num_batched_tokens
        elements = min(args.max_num_seqs, tokens) * arch.vocab_size
        n.append(elements)
        y.append(e.measured_terms["activation_peak_gib"] * GiB - tokens * arch.hidden_size * 2.0 - 18.0 * elements)
        k = peers(arch, plan)
        (peer_rows if k else base_rows).append((k, e.measured_terms["non_torch_gib"] * GiB))
    na, ya = np.array(n), np.array(y)
    t = float(na @ ya / (na @ na))
    base = float(np.mean([v for _, v in base_rows]))
    per = float(np.mean([(v - base) / k for k, v in peer_rows]))
    return Constants(sort_temp_bytes=round(t, 2), non_torch_base_bytes=round(base / GiB, 4) * GiB,
                     nccl_peer_bytes=round(per / GiB, 4) * GiB)


def leave_one_out(entries: list[StartupLogEntry], repo: Path) -> dict[str, Replay]:
    """Each fit log predicted with the constants refitted without it."""
    out = {}
    for e in entries:
        if e.measured_terms and not e.not_predicted:
            consts = fit_constants([x for x in entries if x.id != e.id], repo)
            out[e.id] = replay(e, repo, consts)
    return out
