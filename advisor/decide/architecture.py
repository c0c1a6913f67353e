"""What `advisor inspect` says of a model: the normalized architecture, parameter counts, bytes and KV per token,
the allreduces of one forward pass under TP, and the published quality scores (with their sources). A typed row
per model; `report/tables.py: inspect_table` renders it, `--json` writes its fields in this order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from advisor.decide.ranked import Unranked
    from advisor.resolve import Resolved


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MoeSummary(_Row):
    num_experts: int
    experts_per_token: int
    shared_experts: int
    moe_layers: int
    expert_intermediate_size: int


class WeightGroupRow(_Row):
    group: str
    params: int
    format: str
    shard: str


class QualityScore(_Row):
    """One published score (`quality/facts.py: QualityFact`'s fields), its 95% half-width where the setting states
    one, and whether it is on the default scale (the one `rank` reads)."""

    model: str
    benchmark: str
    setting: str
    score: float
    unit: str
    source: str
    kind: str
    date: str
    notes: str
    ci95: float | None
    default_scale: bool


class ModelSummary(_Row):
    """The `inspect --json` object of one model (DESIGN 3.3)."""

    model: str
    source: str
    architecture: str
    num_layers: int
    hidden_size: int
    attention: str
    layer_kinds: dict[str, int]
    # decoder layers with no attention or mamba mixer (Nemotron-H's MLP-only blocks): the mixer counts plus this
    # add up to num_layers
    mlp_only_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    moe: MoeSummary | None
    total_params: int
    active_params: int
    active_params_excl_embedding: int
    active_params_excl_embeddings: int
    mtp_params: int
    vision_params: int
    weight_dtype: str
    weight_bytes: int
    checkpoint_bytes: int
    weights_by_group: list[WeightGroupRow]
    kv_dtype: str
    kv_bytes_per_token: int | float  # int | float: a count stays an int in JSON, as the architecture gives it
    window_kv_bytes_per_sequence: int | float
    state_bytes_per_sequence: int | float
    max_context: int
    allreduces_per_forward: int
    # what the Hub's safetensors headers count (packed 4-bit formats count packed elements; MTP and vision
    # included): a cross-check of total_params, None unless read from the Hub
    checkpoint_elements_by_dtype: dict[str, int] | None
    # published quality scores with their sources (advisor/quality); empty: none found, never estimated
    quality: list[QualityScore]
    quality_scored_as: str
    quality_note: str | None


def describe(r: Resolved) -> ModelSummary:
    """One resolved model's summary."""
    from advisor.cost.collectives import allreduce_summary, step_collectives
    from advisor.cost.plan import Plan
    from advisor.quality.facts import DEFAULT_SCALE, for_model, variants

    a = r.arch
    moe = None if a.moe is None else MoeSummary(
        num_experts=a.moe.num_experts, experts_per_token=a.moe.experts_per_token,
        shared_experts=a.moe.shared_experts, moe_layers=a.moe.moe_layers,
        expert_intermediate_size=a.moe.expert_intermediate)
    under_tp = allreduce_summary(step_collectives(a, Plan(tp=2)))  # the count is the same at any TP > 1
    scored_as, note = variants().get(a.model, (a.model, ""))
    return ModelSummary(
        model=a.model, source=r.source, architecture=a.architecture, num_layers=a.num_layers,
        hidden_size=a.hidden_size, attention=a.attention, layer_kinds=a.layer_kinds,
        mlp_only_layers=a.num_layers - sum(g.layers for g in a.attn_groups),
        num_attention_heads=a.num_attention_heads, num_kv_heads=a.num_kv_heads, head_dim=a.head_dim,
        moe=moe, total_params=a.total_params, active_params=a.active_params,
        active_params_excl_embedding=a.active_params_excl_embedding,
        active_params_excl_embeddings=a.active_params_excl_embeddings,
        mtp_params=a.mtp_params, vision_params=a.vision_params, weight_dtype=a.weight_dtype,
        weight_bytes=round(a.weight_bytes), checkpoint_bytes=round(a.checkpoint_bytes),
        weights_by_group=[WeightGroupRow(group=w.name, params=w.params, format=w.fmt, shard=w.shard)
                          for w in a.weights],
        kv_dtype=a.kv_dtype, kv_bytes_per_token=a.kv_bytes_per_token(),
        window_kv_bytes_per_sequence=a.window_kv_bytes_per_seq(),
        state_bytes_per_sequence=a.state_bytes_per_seq(), max_context=a.max_context,
        allreduces_per_forward=int(under_tp["calls"]), checkpoint_elements_by_dtype=r.safetensors_params,
        quality=[QualityScore(**f.model_dump(), ci95=f.ci95, default_scale=f.benchmark == DEFAULT_SCALE)
                 for f in for_model(a.model, DEFAULT_SCALE)],
        quality_scored_as=scored_as, quality_note=note or None)


def describe_models(refs: list[str] | None) -> tuple[list[ModelSummary], list[Unranked]]:
    """The summary of every model that resolves (all catalog models when none are given), and each that does not
    with its reason, as `rank` keeps them (a model no source holds: found false, "not found: ...")."""
    from advisor.decide.candidates import problem, resolve_models
    from advisor.decide.ranked import Unranked
    from advisor.errors import NotFound

    found, missing = resolve_models(refs)
    return [describe(r) for r in found], [
        Unranked(model=ref, found=not isinstance(err, NotFound), reason=problem(ref, err).removeprefix(f"{ref}: "))
        for ref, err in missing.items()]
