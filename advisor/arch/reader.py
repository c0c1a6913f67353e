"""config.json (+ optional ModelOpt sidecar) -> ModelArch. Features come from fields, never names."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from advisor.arch import blocks, compressed
from advisor.arch.fields import Cfg, ConfigError
from advisor.arch.formats import bytes_per_param
from advisor.arch.groups import attn_groups
from advisor.arch.layout import Layer, block_pattern, layers, nemotron_pattern, num_experts, num_layers
from advisor.arch.model import ModelArch, MoE, WeightGroup
from advisor.arch.nas import layer_cfg, nas_fields, nas_layers
from advisor.arch.quant import QuantScheme, parse_quant
from advisor.arch.vision import vision_params

_MODULE = {  # HF module name of each group, for matching quantization ignore lists
    "attn": "self_attn.q_proj", "attn_replicated": "self_attn.kv_a_proj_with_mqa", "indexer": "self_attn.indexer.wk",
    "linear_attn": "linear_attn.out_proj", "mamba": "mixer.in_proj", "dense_mlp": "mlp.gate_proj",
    "routed_experts": "mlp.experts.0.gate_proj", "shared_experts": "mlp.shared_experts.gate_proj",
    "moe_latent": "mlp.fc1_latent_proj",
}


def read_config(data: dict[str, Any], *, name: str, where: str | None = None,
                sidecar: dict[str, Any] | None = None) -> ModelArch:
    """Normalize one HF config dict. `where` names the file in errors."""
    top = Cfg(data, where or name)
    text = top.sub("text_config") or top
    quant = parse_quant(text if text.has("quantization_config") else top, sidecar)
    n = num_layers(text)
    hidden = text.int("hidden_size", maximum=1 << 20)
    vocab = text.int("vocab_size", maximum=1 << 24)
    heads = text.int("num_attention_heads", maximum=1 << 16)
    experts = num_experts(text)
    if text.has("block_configs"):  # Nemotron-NAS: every layer's own blocks, then the model-wide view of them
        per_layer = nas_layers(text, n)
        text = nas_fields(text, per_layer)
    else:
        per_layer = layers(text, n)
    acc: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    state: dict[str, int] = {}
    for i, layer in enumerate(per_layer):
        own = layer_cfg(text, layer.kv_heads, layer.ffn)
        for (group, shard, linear), params in _block_parts(own, layer, experts, state).items():
            _add(acc, quant, group, shard, linear, params, i, _module(text, group, layer))
    tied = top.bool("tie_word_embeddings", text.bool("tie_word_embeddings"))
    _add(acc, quant, "embed", "vocab", False, vocab * hidden, None)
    if not tied:
        _add(acc, quant, "lm_head", "vocab", quant.per_layer, vocab * hidden, None)
    _add(acc, quant, "norms", "replicated", False, hidden + compressed.hyper_head(text), None)
    weights = tuple(WeightGroup(name=g, shard=s, fmt=f, params=p, layers=lay)
                    for (g, s, f), (p, lay) in sorted(acc.items()) if p > 0)
    mtp_n, mtp_params, mtp_bytes = _mtp(text, quant, per_layer, experts, n)
    vis = vision_params(top)
    groups = attn_groups(text, per_layer, state)
    kinds = {g.kind for g in groups}
    return ModelArch(
        model=name,
        architecture=_first(top.list("architectures")) or text.str("model_type", "unknown"),
        model_type=text.str("model_type", top.str("model_type", "unknown")),
        num_layers=n,
        hidden_size=hidden,
        vocab_size=vocab,
        max_context=text.int("max_position_embeddings", text.int("seq_length", 0, minimum=0) or 4096),
        attention=_attention_kind(text, heads, kinds),
        num_attention_heads=heads,
        num_kv_heads=1 if "mla" in kinds else text.int("num_key_value_heads", heads),
        head_dim=_head_dim(text, kinds),
        attn_groups=groups,
        qk_norm_full_width=text.str("qk_norm_type") == "per_layer",
        moe=_moe(text, per_layer, experts),
        dense_mlp_layers=sum(1 for lay in per_layer if lay.mlp in ("dense", "both")),
        mlp_intermediate=_dense_intermediate(text) if any(lay.mlp in ("dense", "both") for lay in per_layer) else 0,
        weights=weights,
        quant_block=quant.block,
        quant_group_size=quant.group_size,
        kv_dtype="fp8" if quant.kv_fp8 else "bf16",
        tie_word_embeddings=tied,
        mtp_layers=mtp_n,
        mtp_params=mtp_params,
        mtp_bytes=mtp_bytes,
        remote_code=top.has("auto_map") or text.has("auto_map"),
        vision_params=vis,
        vision_bytes=vis * 2.0,  # vision towers stay BF16 (excluded from every scheme in data/configs)
    )


def _dense_intermediate(cfg: Cfg) -> int:
    """Dense MLP width: `intermediate_size_mlp` (Llama-4), `dense_intermediate_size` (MiniMax-M3, whose
    `intermediate_size` is the expert width), else `intermediate_size`."""
    for key in ("intermediate_size_mlp", "dense_intermediate_size", "intermediate_size"):
        if cfg.has(key):
            return cfg.int(key, 0, minimum=0)
    return 0


def _head_dim(cfg: Cfg, kinds: set[Any]) -> int:
    if compressed.is_compressed(cfg):
        return cfg.int("head_dim")
    if "mla" in kinds:
        return cfg.int("qk_nope_head_dim") + cfg.int("qk_rope_head_dim")
    return blocks.attn_geom(cfg, "full").head_dim


def _module(cfg: Cfg, group: str, layer: Layer) -> str:
    """HF name of a group's module in its layer, for quantization ignore lists: Kimi Delta Attention sits
    under `self_attn`; a MoE block beside the dense MLP (`enable_moe_block`) names its experts `experts`."""
    if group == "linear_attn" and layer.mixer == "kda":
        return "self_attn.o_proj"
    if group == "routed_experts" and cfg.bool("enable_moe_block"):
        return "experts.0.gate_proj"
    return _MODULE.get(group, group)


def _first(values: list[Any] | None) -> str | None:
    return str(values[0]) if values else None


def _add(acc: dict[tuple[str, str, str], list[int]], quant: QuantScheme, group: str, shard: str, linear: bool,
         params: int, layer: int | None, name: str | None = None) -> None:
    if layer is None:
        module = {"embed": "model.embed_tokens", "lm_head": "lm_head"}.get(group, "model.norm")
    else:
        module = f"model.layers.{layer}.{name or _MODULE.get(group, group)}"
    fmt = quant.format_for(module, expert=group == "routed_experts", group=group, layer=layer) if linear else "bf16"
    slot = acc[(group, shard, fmt)]
    slot[0] += params
    slot[1] += 0 if layer is None else 1


def _block_parts(cfg: Cfg, layer: Layer, experts: int, state: dict[str, int]) -> blocks.Parts:
    parts: blocks.Parts = {}
    if layer.mixer == "compressed":
        parts.update(compressed.compressed_attention(cfg, layer.ratio))
    elif layer.mixer in ("full", "sliding", "chunked"):
        if cfg.has("kv_lora_rank"):
            parts.update(blocks.mla_attention(cfg, indexer=layer.indexer))
        else:
            parts.update(blocks.softmax_attention(cfg, blocks.attn_geom(cfg, layer.mixer)))
            if layer.indexer:
                _merge(parts, blocks.block_sparse_index(cfg))
    elif layer.mixer == "kda":
        p, state["kda"] = blocks.kda_attention(cfg)
        parts.update(p)
    elif layer.mixer == "linear":
        if cfg.has("linear_num_value_heads"):
            p, state["linear"] = blocks.gdn_attention(cfg)
        else:
            p, state["linear"] = blocks.lightning_attention(cfg, blocks.attn_geom(cfg, "full"))
        parts.update(p)
    elif layer.mixer == "mamba":
        p, state["mamba"] = blocks.mamba2(cfg)
        parts.update(p)
    if layer.mlp in ("dense", "both"):
        _merge(parts, blocks.dense_mlp(cfg))
    if layer.mlp in ("moe", "both"):
        _merge(parts, blocks.moe_block(cfg, experts))
    norms = 2 * cfg.int("hidden_size") * ((layer.mixer is not None) + (layer.mlp is not None)) // 2
    _merge(parts, {("norms", "replicated", False): norms})
    if layer.mixer is not None and compressed.hyper_connections(cfg):
        _merge(parts, {("hyper_connections", "replicated", False): compressed.hyper_connections(cfg)})
    return parts


def _merge(parts: blocks.Parts, more: blocks.Parts) -> None:
    for k, v in more.items():
        parts[k] = parts.get(k, 0) + v


def _attention_kind(cfg: Cfg, heads: int, kinds: set[Any]) -> str:
    if "mla" in kinds:
        return "mla"
    kv = cfg.int("num_key_value_heads", heads)
    if kv == heads:
        return "mha"
    return "mqa" if kv == 1 else "gqa"


def _moe(cfg: Cfg, per_layer: list[Layer], experts: int) -> MoE | None:
    if experts == 0:
        return None
    k = 0
    for key in ("num_experts_per_tok", "num_experts_per_token", "top_k_experts", "experts_per_token"):
        if cfg.has(key):
            k = cfg.int(key)
            break
    if k == 0:
        raise ConfigError(f"{cfg.where}: missing required field 'num_experts_per_tok' for {experts} experts")
    if k > experts:
        raise ConfigError(f"{cfg.where}: field 'num_experts_per_tok' = {k} exceeds {experts} experts")
    moe_layers = sum(1 for lay in per_layer if lay.mlp in ("moe", "both"))
    shared = blocks.shared_intermediate(cfg)
    inter = blocks.expert_intermediate(cfg)
    count = -(-shared // inter) if shared else 0  # experts of the routed width, unless the config counts them
    for key in ("n_shared_experts", "num_shared_experts"):
        if shared and cfg.has(key):
            count = cfg.int(key, minimum=0)
            break
    return MoE(num_experts=experts, experts_per_token=k, shared_experts=count,
               expert_intermediate=inter, shared_intermediate=shared, moe_layers=moe_layers,
               dense_intermediate=_dense_intermediate(cfg))


def _mtp(cfg: Cfg, quant: QuantScheme, per_layer: list[Layer], experts: int, n: int) -> tuple[int, int, float]:
    """MTP modules kept apart (vLLM `deepseek_v2.py: DeepseekV2Model.load_weights` skips them unless a
    drafter loads them, `deepseek_mtp.py`): each is one decoder layer + eh_proj (2H x H) + norms;
    DeepSeek-style `num_nextn_predict_layers` also store their own embed_tokens and shared_head."""
    h, vocab = cfg.int("hidden_size"), cfg.int("vocab_size")
    count, own_embeddings = 0, False
    if cfg.has("num_nextn_predict_layers"):
        count, own_embeddings = cfg.int("num_nextn_predict_layers", minimum=0), True
    elif cfg.has("mtp_num_hidden_layers"):
        count = cfg.int("mtp_num_hidden_layers", minimum=0)
        own_embeddings = cfg.bool("mtp_use_dedicated_embeddings")
    elif cfg.bool("use_mtp") and cfg.has("num_mtp_modules"):
        count = cfg.int("num_mtp_modules", minimum=0) * cfg.int("mtp_transformer_layers", 1)
    if count == 0:
        return 0, 0, 0.0
    params, nbytes = 0, 0.0
    for j in range(count):
        parts: blocks.Parts = {}
        for layer in _mtp_blocks(cfg, per_layer[-1]):
            _merge(parts, _block_parts(cfg, layer, experts, {}))
        parts[("mtp_proj", "tp", True)] = 2 * h * h + 3 * h
        if own_embeddings:
            parts[("embed", "vocab", False)] = 2 * vocab * h
        for (group, _shard, linear), p in parts.items():
            module = f"model.layers.{n + j}.{_MODULE.get(group, group)}"
            fmt = quant.format_for(module, expert=group == "routed_experts", group=group, layer=n + j) \
                if linear else "bf16"
            params += p
            nbytes += p * bytes_per_param(fmt)
    return count, params, nbytes


def _mtp_blocks(cfg: Cfg, last: Layer) -> list[Layer]:
    """The blocks of one MTP module: Nemotron-H names them (`mtp_hybrid_override_pattern` "*E" or its list
    form `mtp_layers_block_type`); otherwise one decoder layer like the last, with softmax attention."""
    pattern = block_pattern(cfg, "mtp_hybrid_override_pattern")
    if pattern:
        return nemotron_pattern(cfg, pattern, len(pattern), "mtp_hybrid_override_pattern")
    mixer = "full" if last.mixer in (None, "linear", "kda", "mamba") else last.mixer
    return [Layer(mixer, last.mlp or "dense", last.ratio)]
