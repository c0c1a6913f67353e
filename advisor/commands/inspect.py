"""`advisor inspect MODEL...`: the normalized architecture, parameter counts, bytes and KV per token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.commands import options as opt
from advisor.commands.output import emit

if TYPE_CHECKING:
    from advisor.resolve import Resolved


def inspect(models: opt.Models = None, json_out: opt.Json = False) -> None:
    """Read config.json into the normalized architecture: layers, attention, experts, params, bytes."""
    from advisor.commands.models import resolve_models

    found, _ = resolve_models(models)
    docs = [inspect_doc(r) for r in found]
    from advisor.report.tables import inspect_table

    emit(docs, json_out, inspect_table)


def inspect_doc(r: Resolved) -> dict[str, Any]:
    """The `inspect --json` object of one model."""
    from advisor.cost.collectives import allreduce_summary, step_collectives
    from advisor.cost.plan import Plan
    from advisor.quality.facts import DEFAULT_SCALE, for_model, variants

    a = r.arch
    moe = None
    if a.moe is not None:
        moe = {"num_experts": a.moe.num_experts, "experts_per_token": a.moe.experts_per_token,
               "shared_experts": a.moe.shared_experts, "moe_layers": a.moe.moe_layers,
               "expert_intermediate_size": a.moe.expert_intermediate}
    under_tp = allreduce_summary(step_collectives(a, Plan(tp=2)))  # the count is the same at any TP > 1
    return {
        "model": a.model, "source": r.source, "architecture": a.architecture, "num_layers": a.num_layers,
        "hidden_size": a.hidden_size, "attention": a.attention, "layer_kinds": a.layer_kinds,
        # decoder layers with no attention or mamba mixer (Nemotron-H's MLP-only blocks): the mixer counts above
        # plus this add up to num_layers
        "mlp_only_layers": a.num_layers - sum(g.layers for g in a.attn_groups),
        "num_attention_heads": a.num_attention_heads, "num_kv_heads": a.num_kv_heads, "head_dim": a.head_dim,
        "moe": moe, "total_params": a.total_params, "active_params": a.active_params,
        "active_params_excl_embedding": a.active_params_excl_embedding,
        "active_params_excl_embeddings": a.active_params_excl_embeddings,
        "mtp_params": a.mtp_params, "vision_params": a.vision_params, "weight_dtype": a.weight_dtype,
        "weight_bytes": round(a.weight_bytes), "checkpoint_bytes": round(a.checkpoint_bytes),
        "weights_by_group": [{"group": w.name, "params": w.params, "format": w.fmt, "shard": w.shard}
                             for w in a.weights],
        "kv_dtype": a.kv_dtype, "kv_bytes_per_token": a.kv_bytes_per_token(),
        "window_kv_bytes_per_sequence": a.window_kv_bytes_per_seq(),
        "state_bytes_per_sequence": a.state_bytes_per_seq(), "max_context": a.max_context,
        "allreduces_per_forward": int(under_tp["calls"]),
        # what the Hub's safetensors headers count (packed 4-bit formats count packed elements; MTP and
        # vision included): a cross-check of total_params, null unless read from the Hub
        "checkpoint_elements_by_dtype": r.safetensors_params,
        # published quality scores with their sources (advisor/quality); empty: none found, never estimated
        "quality": [{**f.model_dump(), "ci95": f.ci95, "default_scale": f.benchmark == DEFAULT_SCALE}
                    for f in for_model(a.model, DEFAULT_SCALE)],
        "quality_scored_as": variants().get(a.model, (a.model, ""))[0],
        "quality_note": variants().get(a.model, ("", ""))[1] or None,
    }
