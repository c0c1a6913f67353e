"""`predict` of one given disaggregated deployment (x prefill workers at one plan, y decode workers at another):
the prediction at the workload (`cost/disagg_predict.py`), why in words (what the transfer costs, which side limits
it), and the commands that start it (`decide/disagg_command.py`); a deployment that cannot run says why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from advisor.cost.disagg_predict import DisaggPrediction

if TYPE_CHECKING:
    from advisor.cost.plan import Plan
    from advisor.cost.prediction import Workload
    from advisor.decide.disagg_rank import Where


@dataclass(frozen=True)
class Pools:
    """The deployment the flags describe: each side's worker plan and worker count, and the transfer backend."""

    prefill: Plan
    x: int
    decode: Plan
    y: int
    backend: str | None = None


class DisaggPredicted(BaseModel):
    """The prediction, why, and the commands (each: role, node, gpus, env, files, argv, line)."""

    model_config = ConfigDict(frozen=True)

    prediction: DisaggPrediction
    why: list[str]
    calibrated: dict[str, Any]
    command: str
    commands: list[dict[str, Any]]
    command_notes: list[str]


def predict_pools(model: str, pools: Pools, where: Where, w: Workload, max_model_len: int | None
                  ) -> DisaggPredicted:
    """`model` served by `pools` on `where` at workload `w` (module docstring). One line (AdvisorError) for input
    that describes no deployment (`cost/disagg.py: make_disagg`)."""
    from advisor.calibrate.store import terms_for
    from advisor.cost.disagg import make_disagg
    from advisor.cost.disagg_predict import predict_disagg
    from advisor.decide.candidates import check_lengths, resolve_models
    from advisor.decide.disagg_command import disagg_command
    from advisor.decide.disagg_rank import serving_of
    from advisor.decide.disagg_verdict import limit_line, transfer_line
    from advisor.hardware.cluster import Cluster
    from advisor.hardware.placement import pick_gpus

    (r,), _ = resolve_models([model])
    check_lengths(r.arch.max_context, r.arch.model, w.input_len, w.output_len, max_model_len)
    terms, calibrated = terms_for(where.hw, where.settings.engine, where.calibration)
    cl = where.cluster or Cluster(where.hw)
    budget = cl.gpus if cl.multi_node else (where.gpus or where.hw.topology.num_gpus)
    plan = make_disagg(r.arch, where.hw, pools.prefill, pools.x, pools.decode, pools.y, where.settings, cluster=cl,
                       budget=budget, backend=pools.backend)
    pred = predict_disagg(plan, terms, w.concurrency, w.input_len, w.output_len)
    if not plan.runs:
        return DisaggPredicted(prediction=pred, why=[f"does not run: {plan.refused}"], calibrated=calibrated,
                               command="", commands=[], command_notes=[])
    why = [transfer_line(pred), *([line] if (line := limit_line(pred)) else [])]
    ids = pick_gpus(where.hw, budget) if not cl.multi_node and budget < where.hw.topology.num_gpus else None
    cmd = disagg_command(plan, serving_of(r.arch, pools.prefill), 1, cl, ids)
    return DisaggPredicted(prediction=pred, why=why, calibrated=calibrated, command=cmd.command,
                           commands=[launch.doc() for launch in cmd.launches], command_notes=list(cmd.notes))
