"""Compressed sparse attention with hyper-connections (DeepSeek-V4 family), read from its fields:
`o_lora_rank`/`o_groups` (grouped low-rank output), `compress_ratios` (per layer), `index_*` (indexer of the
ratio-4 layers), `hc_mult` (manifold-constrained hyper-connections).

Shapes follow vLLM `model_executor/models/deepseek_v4.py` (`DeepseekV4Attention`, `DeepseekV4DecoderLayer`,
`DeepseekV4Model`), `layers/deepseek_v4_attention.py` (`DeepseekV4Indexer`) and `layers/deepseek_compressor.py`
(`DeepseekCompressor`):
- attention: fused wq_a + wkv H*(q_lora + d) and q_norm/kv_norm replicated; wq_b q_lora*heads*d, wo_a
  heads*d*o_lora (grouped: o_groups blocks of heads*d/o_groups x o_lora), wo_b o_groups*o_lora*H sharded by
  heads; one attention sink per head. One KV head of width d (K = V), RoPE on the last `qk_rope_head_dim`.
- compressor (ratio r > 1): wkv + wgate H * 2*c*d with c = 2 when r = 4 (overlapping windows) else 1, an
  absolute position table r * c*d and a norm d.
- indexer (ratio 4 only): wq_b q_lora * index_heads * index_d, weights_proj H * index_heads, its own
  compressor at width index_d.
- hyper-connections per layer: two mixes (attention, FFN) of (2 + m)*m x m*H weights + (2 + m)*m bias + 3
  scales; the head mix m x m*H + m + 1 (fp32 in the checkpoint, counted as parameters).
"""

from __future__ import annotations

from advisor.arch.blocks import Parts
from advisor.arch.fields import Cfg

# Bytes of one compressed-KV entry at head width 512 in vLLM's FP8 sparse cache: 448 fp8 NoPE + 64 bf16 RoPE
# + 7 scale bytes + 1 pad (`deepseek_v4_attention.py: DeepseekV4MultiHeadLatentAttentionWrapper.head_bytes`).


def is_compressed(cfg: Cfg) -> bool:
    """A config whose attention is the compressed-sparse kind (per-layer `compress_ratios` + `o_lora_rank`)."""
    return cfg.has("compress_ratios") and cfg.has("o_lora_rank")


def _compressor(h: int, d: int, ratio: int) -> tuple[int, int]:
    """(linear, small) parameters of one `DeepseekCompressor` at head width d."""
    c = 2 if ratio == 4 else 1
    return h * 2 * c * d, ratio * c * d + d


def compressed_attention(cfg: Cfg, ratio: int) -> Parts:
    """One compressed-sparse attention layer of compression `ratio` (0 = sliding window only)."""
    h, heads, d = cfg.int("hidden_size"), cfg.int("num_attention_heads"), cfg.int("head_dim")
    q_rank, o_rank, groups = cfg.int("q_lora_rank"), cfg.int("o_lora_rank"), cfg.int("o_groups", 1)
    sharded = q_rank * heads * d + heads * d * o_rank + groups * o_rank * h
    replicated = h * (q_rank + d)
    small = q_rank + d + heads
    indexer = 0
    if ratio > 1:
        lin, norm = _compressor(h, d, ratio)
        replicated += lin
        small += norm
    if ratio == 4 and cfg.has("index_n_heads"):
        ih, idim = cfg.int("index_n_heads"), cfg.int("index_head_dim")
        lin, norm = _compressor(h, idim, ratio)
        indexer = q_rank * ih * idim + lin
        small += h * ih + norm + 2 * idim  # weights_proj (never quantized), compressor, k_norm (LayerNorm)
    parts: Parts = {("attn", "tp", True): sharded, ("attn_replicated", "replicated", True): replicated,
                    ("attn_norms", "replicated", False): small}
    if indexer:
        parts[("indexer", "replicated", True)] = indexer
    return parts


def hyper_connections(cfg: Cfg) -> int:
    """Hyper-connection mixing parameters of one decoder layer (`hc_mult` streams; 0 without)."""
    m = cfg.int("hc_mult", 0, minimum=0)
    if m == 0:
        return 0
    mix = (2 + m) * m
    return 2 * (mix * m * cfg.int("hidden_size") + mix + 3)


def hyper_head(cfg: Cfg) -> int:
    """The final hyper-connection collapse (`hc_head_fn`, `hc_head_base`, `hc_head_scale`)."""
    m = cfg.int("hc_mult", 0, minimum=0)
    return m * m * cfg.int("hidden_size") + m + 1 if m else 0
