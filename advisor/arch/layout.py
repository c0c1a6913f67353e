"""Per-layer kinds read from config fields: which mixer (full/sliding/chunked/linear/mamba attention)
and which MLP (dense/MoE/none) each decoder layer has. Never from architecture names."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.arch.fields import Cfg, ConfigError, shown


@dataclass(frozen=True)
class Layer:
    mixer: str | None  # "full" | "sliding" | "chunked" | "linear" | "kda" | "mamba" | "compressed" | None
    mlp: str | None  # "dense" | "moe" | "both" | None
    ratio: int = 0  # "compressed" (DeepSeek-V4 `compress_ratios`): KV tokens merged into one; 0 = window only
    indexer: bool = True  # a sparse-attention layer with its own indexer (GLM-5.2 `indexer_types` "shared": none)
    kv_heads: int = 0  # Nemotron-NAS `block_configs`: this layer's KV heads (0 = the config's)
    ffn: int = 0  # Nemotron-NAS `block_configs`: this layer's dense MLP width (0 = the config's)


def num_experts(cfg: Cfg) -> int:
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        if cfg.has(key):
            return cfg.int(key, minimum=0)
    return 0


_BLOCK_TYPES = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}  # Nemotron-H `layers_block_type` names


def num_layers(cfg: Cfg) -> int:
    """Decoder layers: `num_hidden_layers`, or the length of a per-layer list that names every block
    (Nemotron-3 Ultra gives only `layers_block_type`)."""
    if cfg.has("num_hidden_layers"):
        return cfg.int("num_hidden_layers", maximum=100_000)
    for key in ("layers_block_type", "hybrid_override_pattern", "layer_types"):
        value = cfg.raw(key)
        if isinstance(value, list | str) and 0 < len(value) <= 100_000:
            return len(value)
    raise ConfigError(f"{cfg.where}: missing required field 'num_hidden_layers'")


def block_pattern(cfg: Cfg, key: str) -> str | None:
    """A Nemotron-H block pattern as M/*/-/E chars: `hybrid_override_pattern` (a string) or its renamed list
    form `layers_block_type` (mamba/attention/mlp/moe); the same for the MTP block (`mtp_*`)."""
    value = cfg.raw(key)
    if value is None and key.endswith("hybrid_override_pattern"):
        value = cfg.raw(key.replace("hybrid_override_pattern", "layers_block_type"))
        key = key.replace("hybrid_override_pattern", "layers_block_type")
    if isinstance(value, list):
        bad = [v for v in value if not isinstance(v, str) or v not in _BLOCK_TYPES]  # a list is not hashable
        if bad:
            raise ConfigError(f"{cfg.where}: field {key!r} has unknown block {shown(bad[0])}")
        return "".join(_BLOCK_TYPES[v] for v in value)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{cfg.where}: field {key!r} must be a string of M,*,-,E")
    return value


def layers(cfg: Cfg, n: int) -> list[Layer]:
    """One Layer per decoder layer."""
    pattern = block_pattern(cfg, "hybrid_override_pattern")
    if pattern is not None:
        return nemotron_pattern(cfg, pattern, n)
    mixers = _mixers(cfg, n)
    mlps = _mlps(cfg, n)
    ratios = _ratios(cfg, n)
    own = _own_indexers(cfg, n)
    return [Layer("compressed" if r is not None else m, f, r or 0, x)
            for m, f, r, x in zip(mixers, mlps, ratios, own, strict=True)]


def _own_indexers(cfg: Cfg, n: int) -> list[bool]:
    """Which layers carry their own sparse-attention indexer: GLM-5.2 `indexer_types` ("full" computes its
    top-k, "shared" reuses the previous layer's); MiniMax-M3 `sparse_attention_config.sparse_attention_freq`
    (1 = block-sparse layer with index projections). Without either list every layer has one."""
    types = _per_layer_list(cfg, "indexer_types", n)
    if types is not None:
        bad = [t for t in types if t not in ("full", "shared")]
        if bad:
            raise ConfigError(f"{cfg.where}: field 'indexer_types' has unknown kind {shown(bad[0])}")
        return [t == "full" for t in types]
    sparse = cfg.sub("sparse_attention_config")
    if sparse is not None and sparse.bool("use_sparse_attention", True):
        freq = _per_layer_list(sparse, "sparse_attention_freq", n)
        if freq is not None:
            return [bool(f) for f in _flags(sparse, "sparse_attention_freq", freq)]
    return [True] * n


def nemotron_pattern(cfg: Cfg, pattern: str, n: int, key: str = "hybrid_override_pattern") -> list[Layer]:
    """Nemotron-H `hybrid_override_pattern`: M = mamba2, * = attention, - = MLP, E = MoE, one block each."""
    if len(pattern) != n or set(pattern) - set("M*-E"):
        raise ConfigError(f"{cfg.where}: field {key!r} must be {n} chars of M,*,-,E")
    table = {"M": Layer("mamba", None), "*": Layer("full", None), "-": Layer(None, "dense"),
             "E": Layer(None, "moe")}
    return [table[c] for c in pattern]


def _ratios(cfg: Cfg, n: int) -> list[int | None]:
    """DeepSeek-V4 `compress_ratios`: per layer, how many tokens' KV one compressed entry holds (4 with an
    indexer, 128 without); 0 = sliding-window attention only (vLLM `deepseek_v4.py: DeepseekV4Attention`)."""
    values = cfg.list("compress_ratios")
    if values is None:
        return [None] * n
    if len(values) not in (n, n + 1):  # DeepSeek-V4 lists one more entry, for its MTP layer
        raise ConfigError(f"{cfg.where}: field 'compress_ratios' has {len(values)} entries for {n} layers")
    return list(_flags(cfg, "compress_ratios", values[:n], maximum=1 << 16))


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
                 "linear_attention": "linear", "mamba": "mamba", "attention": "full",
                 "deepseek_sparse_attention": "full"}  # GLM-5.2: MLA + DSA indexer (read from kv_lora_rank, index_*)
        bad = [t for t in types if not isinstance(t, str) or t not in table]
        if bad:
            raise ConfigError(f"{cfg.where}: field 'layer_types' has unknown kind {bad[0]!r}")
        return [table[t] for t in types]
    linear = cfg.sub("linear_attn_config")
    if linear is not None and linear.has("kda_layers"):
        return _kda_layers(linear, n)
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


def _kda_layers(linear: Cfg, n: int) -> list[str]:
    """Kimi-Linear `linear_attn_config`: 1-based layer numbers of the Kimi Delta Attention layers
    (`kda_layers`) and of the MLA layers (`full_attn_layers`); together they name every layer once."""
    kda = linear.list("kda_layers") or []
    full = linear.list("full_attn_layers") or []
    numbers = sorted([*kda, *full], key=lambda v: v if isinstance(v, int) else -1)
    if numbers != list(range(1, n + 1)):
        raise ConfigError(f"{linear.where}: fields 'kda_layers' and 'full_attn_layers' must number layers 1..{n} "
                          "once each")
    kda_set = set(kda)
    return ["kda" if i + 1 in kda_set else "full" for i in range(n)]


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
    kinds = _per_layer_list(cfg, "mlp_layer_types", n)
    if kinds is not None:  # GLM-5.2: "dense" | "sparse" per layer
        bad = [k for k in kinds if k not in ("dense", "sparse")]
        if bad:
            raise ConfigError(f"{cfg.where}: field 'mlp_layer_types' has unknown kind {shown(bad[0])}")
        return ["moe" if k == "sparse" else "dense" for k in kinds]
    only_dense = set(_flags(cfg, "mlp_only_layers", cfg.list("mlp_only_layers") or [], maximum=n - 1))
    first_dense = cfg.int("first_k_dense_replace", 0, minimum=0)
    freq = cfg.int("moe_layer_freq", 1)
    step = cfg.int("interleave_moe_layer_step", 0, minimum=0) or cfg.int("decoder_sparse_step", 1)
    out = []
    for i in range(n):
        moe = i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in only_dense
        out.append("moe" if moe else "dense")
    return out
