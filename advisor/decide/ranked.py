"""What a ranking returns: each ranked row (`RankedPlan`), each model that could not be ranked (`Unranked`), and
the ranking itself (`Ranking`). Kept apart from `choose` (which builds them) and `explain` (which words them), so
that neither imports the other's types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from advisor.cost.prediction import Prediction
from advisor.cost.sweep import Sweep
from advisor.decide.query import Query
from advisor.decide.replicas import Deployment


class RankedPlan(Prediction):
    """One ranked row: the prediction at the scored workload, and why and how to run it."""

    rank: int
    score: float
    objective: str
    meets: bool  # goodput: some concurrency up to the asked one keeps TPOT/TTFT within the limits (else True)
    miss: float  # goodput plans that do not meet: how far the closest point is beyond the limits (1.5 = 50% over)
    constraints: list[str]
    command: str  # the deployment's pasteable lines, one per command (every argument shell-quoted)
    commands: list[dict[str, Any]]  # each command: role, node, gpus, env, files, argv, line (`decide/command.py`)
    command_notes: list[str]  # what the command needs beyond itself (a pre-quantized checkpoint) and how the GPU
    # runs the weight format
    why: str
    # with --max-tpot-ms/--max-ttft-ms: the most users within them, the throughput there and the limit that binds
    max_users_at_slo: int | None = None
    output_tok_s_at_slo: float | None = None
    binding_limit: str | None = None
    # at the operating point (the SLO capacity when limits are given, else the scored workload)
    gpu_hour_price: float | None = None  # USD per GPU-hour of this row's box (--gpu-hour-price)
    usd_per_mtok: float | None = None  # with --gpu-hour-price
    kwh_per_mtok: float | None = None  # upper bound: every GPU at its rated board power
    replicas: int = 1  # copies of the plan the budget holds side by side (`deployment` says how they serve)
    node_output_tok_s: float | None = None  # every replica's tok/s summed at the operating point
    # the deployment at the scored load: replicas, GPUs, users in all and per replica, summed tok/s and running
    # sequences (the prediction fields above are its busiest replica's); `decide/replicas.py`
    deployment: Deployment | None = None
    # with --speculative: the MTP assumption (drafts, acceptance and its source, TPOT without it), or why none
    # was applied
    speculation: str | None = None
    # quality on the query's one scale (published, sourced; or the user's own evals); None: unknown
    quality: float | None = None
    quality_benchmark: str | None = None
    quality_ci95: float | None = None
    quality_source: str | None = None
    quality_measured_on: str | None = None  # the model id the score belongs to (a variant says whose)
    quality_note: str | None = None


class Unranked(BaseModel):
    """A model that could not be ranked (runs nowhere, unknown, or too short a context), with the reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    source: str | None = None
    found: bool = True  # False: no source holds the model (the reason says "not found")
    fits: bool = False
    reason: str
    rank: None = None


@dataclass(frozen=True)
class Ranking:
    rows: tuple[RankedPlan, ...]
    unranked: tuple[Unranked, ...]
    sweep: Sweep | None  # every runnable plan of every ranked model over the query's grid
    query: Query
    verdict: str | None = None  # when no plan meets the query's limits: that, and the closest plan
    comparison: str | None = None  # how #1 beats #2, by the computed difference that matters most
    order: str | None = None  # what the rows are ordered by when it is not the query's score ($/Mtok across boxes)

    def best_and_others(self) -> list[tuple[str, int, bool]]:
        """(model, case index in the sweep, is the ranked plan) for each ranked model's runnable plans, ranked
        plan first, models in rank order."""
        assert self.sweep is not None
        out: list[tuple[str, int, bool]] = []
        for row in self.rows:
            if any(m == row.model for m, _, _ in out):
                continue
            cases = [(i, c) for i, c in enumerate(self.sweep.cases) if c.arch.model == row.model]
            best = next(i for i, c in cases if c.plan.label() == row.plan.label)
            out.append((row.model, best, True))
            out += [(row.model, i, False) for i, _ in cases if i != best]
        return out
