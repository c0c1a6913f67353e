"""Attention groups: the KV (or state) geometry of the decoder layers of one mixer kind, from config fields."""

from __future__ import annotations

from collections import defaultdict

from advisor.arch import blocks
from advisor.arch.fields import Cfg
from advisor.arch.layout import Layer
from advisor.arch.model import AttnGroup
from advisor.arch.nas import layer_cfg

# DSA indexer cache per token per layer: fp8 head_dim + fp32 scale per 128 (vLLM
# `models/deepseek_v2.py:Indexer`, DeepseekV32IndexerCache: 128 + 128/128*4 = 132 bytes).
_INDEX_SCALE_BYTES_PER_128 = 4


def attn_groups(cfg: Cfg, per_layer: list[Layer], state: dict[str, int]) -> tuple[AttnGroup, ...]:
    """One group per (mixer kind, compression ratio, own KV heads) in layer order of first appearance, sorted by
    kind (Nemotron-NAS layers read their own KV heads: `nas.layer_cfg`)."""
    counts: dict[tuple[str, int, int], int] = defaultdict(int)
    for layer in per_layer:
        if layer.mixer is not None:
            counts[(layer.mixer, layer.ratio, layer.kv_heads)] += 1
    return tuple(_attn_group(layer_cfg(cfg, kv_heads=kv), kind, ratio, count, state)
                 for (kind, ratio, kv), count in sorted(counts.items()))


def _index_bytes(idim: int) -> int:
    return idim + idim // 128 * _INDEX_SCALE_BYTES_PER_128


def _attn_group(cfg: Cfg, kind: str, ratio: int, count: int, state: dict[str, int]) -> AttnGroup:
    heads = cfg.int("num_attention_heads")
    if kind == "compressed":
        return _compressed_group(cfg, ratio, count)
    if kind == "kda":  # Kimi Delta Attention: heads of a d x d state, like a Gated DeltaNet group
        lin = cfg.sub("linear_attn_config") or cfg
        d = lin.int("head_dim")
        return AttnGroup(kind="linear", layers=count, num_heads=lin.int("num_heads"), state_elems=state[kind],
                         kv_heads=lin.int("num_heads"), k_dim=d, v_dim=d)
    if kind == "linear" and cfg.has("linear_num_value_heads"):  # Gated DeltaNet: value heads of dk x dv state
        return AttnGroup(kind=kind, layers=count, num_heads=heads, state_elems=state[kind],
                         kv_heads=cfg.int("linear_num_value_heads"), k_dim=cfg.int("linear_key_head_dim"),
                         v_dim=cfg.int("linear_value_head_dim"))
    if kind in ("linear", "mamba"):
        return AttnGroup(kind="mamba" if kind == "mamba" else "linear", layers=count, num_heads=heads,
                         state_elems=state[kind])
    if cfg.has("kv_lora_rank"):
        latent = cfg.int("kv_lora_rank") + cfg.int("qk_rope_head_dim")
        index, topk, iheads, idim = 0, 0, 0, 0
        if cfg.has("index_head_dim"):
            idim = cfg.int("index_head_dim")
            index = _index_bytes(idim)
            topk = cfg.int("index_topk", 2048)  # vLLM `deepseek_v2.py: Indexer` default topk_tokens
            iheads = cfg.int("index_n_heads")
        return AttnGroup(kind="mla", layers=count, num_heads=heads, kv_heads=1, latent_dim=latent,
                         rope_dim=cfg.int("qk_rope_head_dim"),
                         head_dim=cfg.int("qk_nope_head_dim") + cfg.int("qk_rope_head_dim"),
                         k_dim=cfg.int("qk_nope_head_dim") + cfg.int("qk_rope_head_dim"), v_dim=cfg.int("v_head_dim"),
                         index_bytes_per_token=index, index_topk=topk, index_heads=iheads, index_dim=idim,
                         window=_window(cfg, kind))
    g = blocks.attn_geom(cfg, kind)
    return AttnGroup(kind="full" if kind == "full" else "sliding", layers=count, num_heads=g.heads,
                     kv_heads=g.kv_heads, head_dim=g.head_dim, k_dim=g.head_dim, v_dim=0 if g.k_eq_v else g.v_dim,
                     window=_window(cfg, kind))


def _compressed_group(cfg: Cfg, ratio: int, count: int) -> AttnGroup:
    """Compressed sparse attention (vLLM `deepseek_v4_attention.py`): one latent KV entry of width d (K = V)
    per `ratio` tokens, read through the indexer's top-k when ratio is 4; ratio 0 layers keep only the
    `sliding_window` of uncompressed entries. The sliding window every layer also keeps (128 tokens) is not
    counted for the compressed layers."""
    d, rope = cfg.int("head_dim"), cfg.int("qk_rope_head_dim")
    index, topk, iheads, idim = 0, 0, 0, 0
    if ratio == 4 and cfg.has("index_head_dim"):
        idim = cfg.int("index_head_dim")
        index, topk, iheads = _index_bytes(idim), cfg.int("index_topk", 512), cfg.int("index_n_heads")
    return AttnGroup(kind="mla", layers=count, num_heads=cfg.int("num_attention_heads"), kv_heads=1, latent_dim=d,
                     rope_dim=rope, head_dim=d, k_dim=d, v_dim=d, index_bytes_per_token=index, index_topk=topk,
                     index_heads=iheads, index_dim=idim, kv_compress=max(ratio, 1),
                     window=None if ratio else cfg.int("sliding_window"))


def _window(cfg: Cfg, kind: str) -> int | None:
    if kind == "sliding":
        return cfg.int("sliding_window", 0, minimum=0) or cfg.int("sliding_window_size")
    if kind == "chunked":
        return cfg.int("attention_chunk_size")
    return None
