"""Nemotron-NAS / DeciLM `block_configs`: one entry per decoder layer choosing its attention (GQA with its own
`n_heads_in_group`, or `no_op`: no attention) and its FFN (a SwiGLU MLP of its own width, or `no_op`), as vLLM
builds them (`model_executor/models/nemotron_nas.py: DeciLMDecoderLayer`)."""

from __future__ import annotations

from typing import Any

from advisor.arch.fields import Cfg, ConfigError, shown
from advisor.arch.layout import Layer

# Block options vLLM's DeciLMDecoderLayer does not build (it reads only `no_op`, `n_heads_in_group`, `ffn_mult`
# or `intermediate_size`): a layer asking for one cannot be costed as the engine would run it.
_UNBUILT = {"attention": ("replace_with_linear", "sparsify", "window_length", "num_sink_tokens"),
            "ffn": ("replace_with_linear", "sparsify")}


def ffn_width(ffn_mult: float, hidden: int) -> int:
    """DeciLM's FFN width: int(2 x ffn_mult x hidden / 3) rounded up to a multiple of 256 (vLLM
    `nemotron_nas.py: _ffn_mult_to_intermediate_size`, `_find_multiple`)."""
    width = int(2 * ffn_mult * hidden / 3)
    return -(-width // 256) * 256


def nas_layers(cfg: Cfg, n: int) -> list[Layer]:
    """One Layer per `block_configs` entry: mixer "full" with KV heads = heads / n_heads_in_group, or None
    (`attention.no_op`); MLP "dense" of its own width (`ffn.ffn_mult` or `ffn.intermediate_size`), or None."""
    entries = cfg.list("block_configs") or []
    if len(entries) != n:
        raise ConfigError(f"{cfg.where}: field 'block_configs' has {len(entries)} entries for {n} layers")
    heads, hidden = cfg.int("num_attention_heads"), cfg.int("hidden_size")
    return [_layer(Cfg(e, f"{cfg.where}:block_configs[{i}]"), heads, hidden) for i, e in enumerate(entries)]


def _layer(block: Cfg, heads: int, hidden: int) -> Layer:
    attn, ffn = _part(block, "attention"), _part(block, "ffn")
    kv = 0
    if not attn.bool("no_op"):
        group = attn.int("n_heads_in_group", maximum=heads)
        if heads % group:
            raise ConfigError(f"{attn.where}: field 'n_heads_in_group' = {group} does not divide the {heads} "
                              "attention heads")
        kv = heads // group
    width = 0
    if not ffn.bool("no_op"):
        width = ffn.int("intermediate_size", 0, minimum=0) or ffn_width(_mult(ffn), hidden)
    return Layer("full" if kv else None, "dense" if width else None, kv_heads=kv, ffn=width)


def _part(block: Cfg, key: str) -> Cfg:
    part = block.sub(key)
    if part is None:
        raise ConfigError(f"{block.where}: missing required field {key!r}")
    for option in _UNBUILT[key]:
        if part.raw(option) not in (None, False):
            raise ConfigError(f"{part.where}: field {option!r} is set; vLLM's nemotron_nas.py builds no such "
                              "block, so it is not modelled")
    return part


def _mult(ffn: Cfg) -> float:
    value: Any = ffn.raw("ffn_mult")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 64:
        raise ConfigError(f"{ffn.where}: field 'ffn_mult' must be a number in (0, 64], got {shown(value)}")
    return float(value)


def layer_cfg(cfg: Cfg, kv_heads: int = 0, ffn: int = 0) -> Cfg:
    """The config one layer reads: its own KV heads and FFN width where `block_configs` gives them (0: the
    config's)."""
    if not (kv_heads or ffn):
        return cfg
    own = {"num_key_value_heads": kv_heads or cfg.raw("num_key_value_heads"),
           "intermediate_size": ffn or cfg.raw("intermediate_size")}
    return Cfg({**cfg.data, **own}, cfg.where)


def nas_fields(cfg: Cfg, per_layer: list[Layer]) -> Cfg:
    """The model-wide view of a NAS config, whose `num_key_value_heads` and `intermediate_size` are null: the
    fewest KV heads of its attention layers and its widest FFN (what the activation peak and the shape checks
    read); every layer's own counts come from `layer_cfg`."""
    kv = [lay.kv_heads for lay in per_layer if lay.kv_heads]
    widths = [lay.ffn for lay in per_layer if lay.ffn]
    own = {"num_key_value_heads": min(kv) if kv else None, "intermediate_size": max(widths) if widths else None}
    return Cfg({**cfg.data, **{k: v for k, v in own.items() if v is not None}}, cfg.where)
