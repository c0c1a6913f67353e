"""Per-layer kinds read from config fields: which mixer (full/sliding/chunked/linear/mamba attention)
and which MLP (dense/MoE/none) each decoder layer has. Never from architecture names."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.arch.fields import Cfg, ConfigError


@dataclass(frozen=True)
class Layer:
    mixer: str | None  # "full" | "sliding" | "chunked" | "linear" | "mamba" | None
    mlp: str | None  # "dense" | "moe" | "both" | None


def num_experts(cfg: Cfg) -> int:
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        if cfg.has(key):
            return cfg.int(key, minimum=0)
    return 0


def layers(cfg: Cfg, n: int) -> list[Layer]:
    """One Layer per decoder layer."""
    pattern = cfg.raw("hybrid_override_pattern")
    if pattern is not None:
        return _nemotron_pattern(cfg, pattern, n)
    mixers = _mixers(cfg, n)
    mlps = _mlps(cfg, n)
    return [Layer(m, f) for m, f in zip(mixers, mlps, strict=True)]


def _nemotron_pattern(cfg: Cfg, pattern: object, n: int) -> list[Layer]:
    """Nemotron-H `hybrid_override_pattern`: M = mamba2, * = attention, - = MLP, E = MoE, one block each."""
    if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set("M*-E"):
        raise ConfigError(f"{cfg.where}: field 'hybrid_override_pattern' must be {n} chars of M,*,-,E")
    table = {"M": Layer("mamba", None), "*": Layer("full", None), "-": Layer(None, "dense"),
             "E": Layer(None, "moe")}
    return [table[c] for c in pattern]


def _per_layer_list(cfg: Cfg, key: str, n: int) -> list | None:
    values = cfg.list(key)
    if values is not None and len(values) != n:
        raise ConfigError(f"{cfg.where}: field {key!r} has {len(values)} entries for {n} layers")
    return values


def _flags(cfg: Cfg, key: str, values: list, maximum: int = 1) -> list[int]:
    """A per-layer list of 0/1 flags (or layer indices up to `maximum`); anything else names the field."""
    for i, v in enumerate(values):
        if not isinstance(v, int) or not 0 <= v <= maximum:
            raise ConfigError(f"{cfg.where}: field {key!r} entry {i} must be an integer in [0, {maximum}], got {v!r}")
    return [int(v) for v in values]


def _mixers(cfg: Cfg, n: int) -> list[str]:
    types = _per_layer_list(cfg, "layer_types", n)
    if types is not None:
        table = {"full_attention": "full", "sliding_attention": "sliding", "chunked_attention": "chunked",
                 "linear_attention": "linear", "mamba": "mamba", "attention": "full"}
        bad = [t for t in types if not isinstance(t, str) or t not in table]
        if bad:
            raise ConfigError(f"{cfg.where}: field 'layer_types' has unknown kind {bad[0]!r}")
        return [table[t] for t in types]
    attn_types = _per_layer_list(cfg, "attn_type_list", n)
    if attn_types is not None:  # MiniMax: 1 = softmax attention, 0 = lightning (linear) attention
        return ["full" if t == 1 else "linear" for t in _flags(cfg, "attn_type_list", attn_types)]
    hybrid = _per_layer_list(cfg, "hybrid_layer_pattern", n)
    if hybrid is not None:  # MiMo-V2: 1 = sliding-window layer, 0 = full
        return ["sliding" if t == 1 else "full" for t in _flags(cfg, "hybrid_layer_pattern", hybrid)]
    if cfg.has("full_attention_interval") and cfg.has("linear_num_value_heads"):
        k = cfg.int("full_attention_interval")
        return ["full" if (i + 1) % k == 0 else "linear" for i in range(n)]
    if cfg.has("attention_chunk_size"):
        return _chunked(cfg, n)
    if cfg.has("sliding_window") and cfg.bool("use_sliding_window", True):
        window = cfg.int("sliding_window")
        if window < cfg.int("max_position_embeddings", window + 1):
            return ["sliding"] * n
    return ["full"] * n


def _chunked(cfg: Cfg, n: int) -> list[str]:
    """Llama-4: RoPE layers use chunked local attention, NoPE layers are global. transformers'
    Llama4TextConfig default `no_rope_layers` marks every 4th layer NoPE (`no_rope_layer_interval=4`)."""
    nope = _per_layer_list(cfg, "no_rope_layers", n)
    if nope is None:
        nope = [int((i + 1) % 4 != 0) for i in range(n)]
    return ["chunked" if flag else "full" for flag in _flags(cfg, "no_rope_layers", nope)]


def _mlps(cfg: Cfg, n: int) -> list[str]:
    if num_experts(cfg) == 0:
        return ["dense"] * n
    if cfg.bool("enable_moe_block", False):  # gemma-4: dense MLP and MoE block in every layer
        return ["both"] * n
    freq_list = _per_layer_list(cfg, "moe_layer_freq", n) if isinstance(cfg.raw("moe_layer_freq"), list) else None
    if freq_list is not None:
        return ["moe" if f else "dense" for f in _flags(cfg, "moe_layer_freq", freq_list)]
    only_dense = set(_flags(cfg, "mlp_only_layers", cfg.list("mlp_only_layers") or [], maximum=n - 1))
    first_dense = cfg.int("first_k_dense_replace", 0, minimum=0)
    freq = cfg.int("moe_layer_freq", 1)
    step = cfg.int("interleave_moe_layer_step", 0, minimum=0) or cfg.int("decoder_sparse_step", 1)
    out = []
    for i in range(n):
        moe = i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in only_dense
        out.append("moe" if moe else "dense")
    return out
