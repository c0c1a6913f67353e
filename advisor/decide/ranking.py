"""`advisor rank` over one or several boxes: each box's ranking under its own terms (`calibrate/store.py:
terms_for`) and GPU-hour price, with MTP speculation per model where `--speculative auto` and it ranks better
(`choose.best_of`); several boxes are ranked together (`choose.joint`). Models that could not be ranked are listed
with the reason; nothing ranked at all is an error."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.cost.workload import Settings
    from advisor.decide.query import Query
    from advisor.decide.ranked import Ranking, Unranked
    from advisor.hardware import HardwareProfile
    from advisor.hardware.cluster import Cluster
    from advisor.quality.facts import Quality
    from advisor.resolve import Resolved


@dataclass(frozen=True)
class RankRequest:
    """What to rank: the query, the engine settings, the boxes (profiles) and their prices (none, one for all, or
    one per box), the calibration file, --gpus, --all-plans, the quality scale (and the user's own scores when
    the scale is their file), with --speculative auto the MTP settings to try per model, and with --moe-a2a auto
    whether DeepEP's exchange is tried beside the default."""

    query: Query
    settings: Settings
    boxes: tuple[HardwareProfile, ...]
    quality_scale: str
    prices: tuple[float, ...] = ()
    calibration: str | None = None
    gpus: int | None = None
    all_plans: bool = False
    own_scores: dict[str, Quality] | None = None
    auto_spec: dict[str, Any] | None = field(default=None)
    auto_a2a: bool = False  # --moe-a2a auto: each model's better ranking of the default exchange and DeepEP
    clusters: tuple[Cluster | None, ...] = ()  # --nodes: each box's cluster (none: one node per box)

    def price(self, j: int) -> float | None:
        """Box j's GPU-hour price."""
        if len(self.prices) == len(self.boxes):
            return self.prices[j]
        return self.prices[0] if self.prices else None


def rank_models(req: RankRequest, good: list[Resolved], unknown: list[Unranked]) -> Ranking:
    """The ranking of `good` (`candidates.candidates`) on every box, with `unknown` listed after the ranked
    ones. AdvisorError when no model ranks anywhere (the reasons joined)."""
    from advisor.calibrate.store import terms_for
    from advisor.decide.choose import best_of, joint, rank
    from advisor.quality.facts import lookup

    scores = {r.arch.model: lookup(r.arch.model, req.quality_scale, req.own_scores) for r in good}
    rankings = []
    for j, profile in enumerate(req.boxes):
        terms, calibrated = terms_for(profile, req.settings.engine, req.calibration)
        q = req.query.model_copy(update={"gpu_hour_price": req.price(j)})
        cluster = req.clusters[j] if req.clusters else None
        one = rank(good, profile, req.settings, terms, q, calibrated, req.gpus, req.all_plans, scores, cluster)
        if req.auto_spec is not None:
            spec = req.settings.model_copy(update=req.auto_spec)
            one = best_of(one, rank(good, profile, spec, terms, q, calibrated, req.gpus, req.all_plans, scores,
                                    cluster))
        if req.auto_a2a:
            deep = req.settings.model_copy(update={"moe_a2a_backend": "deepep"})
            one = best_of(one, rank(good, profile, deep, terms, q, calibrated, req.gpus, req.all_plans, scores,
                                    cluster), speculation=False)
        rankings.append(one)
    ranking = rankings[0] if len(rankings) == 1 else joint(rankings)
    ranking = replace(ranking, unranked=ranking.unranked + tuple(unknown))
    if not ranking.rows:
        why = "; ".join(d.reason if d.reason.startswith(d.model) else f"{d.model}: {d.reason}"
                        for d in ranking.unranked)
        raise AdvisorError(f"nothing to rank: {why}")
    return ranking
