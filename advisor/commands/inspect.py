"""`advisor inspect MODEL...`: the normalized architecture, parameter counts, bytes and KV per token."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from advisor.commands._common import print_json

if TYPE_CHECKING:
    from advisor.arch.sources import Resolved


def inspect_doc(r: Resolved) -> dict[str, Any]:
    """The `inspect --json` object of one model."""
    a = r.arch
    moe = None
    if a.moe is not None:
        moe = {"num_experts": a.moe.num_experts, "experts_per_token": a.moe.experts_per_token,
               "shared_experts": a.moe.shared_experts, "moe_layers": a.moe.moe_layers,
               "expert_intermediate_size": a.moe.expert_intermediate}
    return {
        "model": a.model, "source": r.source, "architecture": a.architecture, "num_layers": a.num_layers,
        "hidden_size": a.hidden_size, "attention": a.attention, "layer_kinds": a.layer_kinds,
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
        "allreduces_per_forward": a.allreduces_per_forward + 1 + a.tiny_allreduces_per_forward,
        # what the Hub's safetensors headers count (packed 4-bit formats count packed elements; MTP and
        # vision included): a cross-check of total_params, null unless read from the Hub
        "checkpoint_elements_by_dtype": r.safetensors_params,
    }


def register(app: typer.Typer) -> None:
    @app.command()
    def inspect(
        models: list[str] = typer.Argument(None, help="ORG/NAME[@REV], a folder with config.json, or a "
                                           "config file. None: every bundled catalog model."),
        json_out: bool = typer.Option(False, "--json", help="Print one JSON document."),
    ) -> None:
        """Read config.json into the normalized architecture: layers, attention, experts, params, bytes."""
        from advisor import catalog
        from advisor.arch.sources import resolve

        refs = models or catalog.ids()
        docs = [inspect_doc(resolve(ref)) for ref in refs]
        if json_out:
            print_json(docs)
            return
        _table(docs)


def _table(docs: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    from advisor.report.units import billions, gb, kib

    table = Table(title="Model architectures", show_lines=False)
    for col in ("model", "attention", "layers", "experts", "total", "active", "weights", "KV/token", "source"):
        table.add_column(col, overflow="fold")
    for d in docs:
        kinds = ", ".join(f"{v} {k.replace('_attention', '')}" for k, v in d["layer_kinds"].items()
                          if v and not k.endswith("_mlp"))
        moe = d["moe"]
        experts = f"{moe['num_experts']} top-{moe['experts_per_token']}" + (
            f" +{moe['shared_experts']} shared" if moe["shared_experts"] else "") if moe else "dense"
        attn = f"{d['attention']} {d['num_attention_heads']}h/{d['num_kv_heads']}kv x{d['head_dim']}"
        table.add_row(d["model"], attn, f"{d['num_layers']}: {kinds}", experts, billions(d["total_params"]),
                      billions(d["active_params"]), f"{gb(d['weight_bytes'])} {d['weight_dtype']}",
                      f"{kib(d['kv_bytes_per_token'])} {d['kv_dtype']}", d["source"].split(" (")[0])
    console = Console()
    console.print(table)
    for d in docs:
        if " (" in d["source"]:
            console.print(f"{d['model']}: answered from the bundled catalog ({d['source'].split(' (', 1)[1]}")
