"""`rank --mode disagg|auto`: per model, the best disaggregated deployment and the best aggregated plan on the
budget within the targets (`decide/disagg.py: search`), the verdict with its computed reasons, and the commands of
what the row recommends: with `disagg` the disaggregated deployment (the aggregated plan beside it for
comparison), with `auto` whichever serves more output tok/s within the targets (the verdict's winner; when neither
meets them, the closer one by tok/s). Models are ranked by that tok/s, those that meet the targets first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from advisor.decide.command import ServeCommand, Serving
from advisor.decide.disagg_verdict import AggChoice, DisaggChoice, DisaggQuery, DisaggVerdict
from advisor.decide.ranked import Unranked
from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.arch.model import ModelArch
    from advisor.cost.plan import Plan
    from advisor.cost.workload import Settings
    from advisor.hardware import HardwareProfile
    from advisor.hardware.cluster import Cluster
    from advisor.resolve import Resolved

Mode = Literal["agg", "disagg", "auto"]
MODES: tuple[str, ...] = ("agg", "disagg", "auto")


class DisaggRanked(BaseModel):
    """One model's row: what it recommends (`serve`), its output tok/s on the budget, the verdict, why, and the
    commands (each: role, node, gpus, env, files, argv, line)."""

    model_config = ConfigDict(frozen=True)

    rank: int
    model: str
    hardware: str
    mode: str
    serve: Literal["disaggregated", "aggregated"] | None
    meets: bool
    score: float  # output tok/s on the budget of what `serve` names (0 when nothing runs)
    verdict: DisaggVerdict
    why: list[str]  # the verdict's headline, then what the transfer costs, the interference, per GPU, the limit
    command: str
    commands: list[dict[str, Any]]
    command_notes: list[str]


@dataclass(frozen=True)
class DisaggRanking:
    rows: tuple[DisaggRanked, ...]
    unranked: tuple[Unranked, ...]
    query: DisaggQuery
    budget: int


@dataclass(frozen=True)
class Where:
    """The box the deployments run on: its profile, the engine flags, the cluster (None: one node) and --gpus."""

    hw: HardwareProfile
    settings: Settings
    cluster: Cluster | None = None
    gpus: int | None = None
    calibration: str | None = None
    backend: str | None = None


def rank_disagg(good: list[Resolved], unknown: list[Unranked], where: Where, q: DisaggQuery, mode: Mode
                ) -> DisaggRanking:
    """Every model of `good` searched and ranked (module docstring); AdvisorError when none has a row."""
    from advisor.calibrate.store import terms_for
    from advisor.decide.disagg import search

    terms, _ = terms_for(where.hw, where.settings.engine, where.calibration)
    rows, skipped = [], list(unknown)
    for r in good:
        try:
            v = search(r.arch, where.hw, where.settings, terms, q, cluster=where.cluster, gpus=where.gpus)
        except AdvisorError as err:
            skipped.append(Unranked(model=r.arch.model, source=r.source, reason=str(err)))
            continue
        row = _row(r.arch, v, where, mode)
        if row is None:
            skipped.append(Unranked(model=r.arch.model, source=r.source, fits=v.aggregated is not None,
                                    reason="; ".join(v.reason)))
        else:
            rows.append(row)
    rows.sort(key=lambda d: (not d.meets, -d.score))
    if not rows:
        raise AdvisorError("nothing to rank: " + "; ".join(f"{u.model}: {u.reason}" for u in skipped))
    ranked = tuple(d.model_copy(update={"rank": n}) for n, d in enumerate(rows, 1))
    budget = rows[0].verdict.budget
    return DisaggRanking(rows=ranked, unranked=tuple(skipped), query=q, budget=budget)


def _pick(v: DisaggVerdict, mode: Mode) -> Literal["disaggregated", "aggregated"] | None:
    d, a = v.disaggregated, v.aggregated
    if mode == "disagg":
        return "disaggregated" if d is not None else None
    if v.winner != "neither":
        return v.winner
    if d is None and a is None:
        return None
    return "aggregated" if a is not None and (d is None or a.total_tok_s >= d.total_tok_s) else "disaggregated"


def _row(arch: ModelArch, v: DisaggVerdict, where: Where, mode: Mode) -> DisaggRanked | None:
    serve = _pick(v, mode)
    if serve is None:
        return None
    chosen: DisaggChoice | AggChoice | None = v.disaggregated if serve == "disaggregated" else v.aggregated
    assert chosen is not None
    cmd = disagg_serve(arch, where, chosen, v.budget) if isinstance(chosen, DisaggChoice) else \
        agg_serve(arch, where, chosen)
    return DisaggRanked(rank=0, model=arch.model, hardware=where.hw.id, mode=mode, serve=serve,
                        meets=chosen.meets, score=chosen.total_tok_s, verdict=v, why=list(v.reason),
                        command=cmd.command, commands=[launch.doc() for launch in cmd.launches],
                        command_notes=list(cmd.notes))


def serving_of(arch: ModelArch, plan: Plan) -> Serving:
    """What a printed command serves (`decide/command.py: Serving`)."""
    return Serving(model=arch.model, plan=plan, checkpoint_dtype=arch.weight_dtype, remote_code=arch.remote_code,
                   moe=arch.moe is not None)


def disagg_serve(arch: ModelArch, where: Where, d: DisaggChoice, budget: int) -> ServeCommand:
    """The launches of the chosen deployment, every replica of its unit behind one router (`disagg_command`)."""
    from advisor.cost.disagg import make_disagg
    from advisor.decide.disagg_command import disagg_command
    from advisor.hardware.cluster import Cluster
    from advisor.hardware.placement import pick_gpus

    p = d.prediction
    cl = where.cluster or Cluster(where.hw)
    plan = make_disagg(arch, where.hw, d.prefill_parallel, p.prefill.workers, d.decode_parallel, p.decode.workers,
                       where.settings, cluster=cl, budget=budget, backend=where.backend or p.backend)
    ids = None
    if not cl.multi_node and budget < where.hw.topology.num_gpus:
        ids = pick_gpus(where.hw, budget)
    return disagg_command(plan, serving_of(arch, d.prefill_parallel), d.replicas, cl, ids)


def agg_serve(arch: ModelArch, where: Where, a: AggChoice) -> ServeCommand:
    """The aggregated plan's command (`decide/command.py: serve_command`), with its replicas said."""
    from advisor.cost.sweep import make_case
    from advisor.decide.command import serve_command

    case = make_case(arch, a.parallel, where.hw, where.settings, where.gpus, cluster=where.cluster)
    cmd = serve_command(serving_of(arch, a.parallel), where.hw, case.args, case.cluster)
    if a.replicas > 1:
        more = (f"{a.replicas} replicas of {a.plan} fit the budget ({a.total_tok_s:,.0f} output tok/s in all): start "
                "each on its own GPUs behind an HTTP load balancer",)
        cmd = ServeCommand(cmd.launches, cmd.notes + more)
    return cmd
