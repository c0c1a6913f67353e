"""The normalized architecture: one frozen pydantic model for every config family.

Parameter counts and weight bytes are sums over `weights` (module groups with a storage format and a
sharding rule); KV geometry is per attention group. The cost model reads only this.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from advisor.arch.formats import bytes_per_param, short_name

Shard = Literal["tp", "replicated", "expert", "vocab"]
AttnKind = Literal["full", "sliding", "mla", "linear", "mamba"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WeightGroup(Frozen):
    """Parameters of one module group stored in one format.

    `shard`: tp = split across TP ranks; replicated = every rank holds all; expert = routed experts
    (TP splits each expert's intermediate dim, EP places whole experts); vocab = vocab-parallel."""

    name: str
    params: int
    fmt: str
    shard: Shard
    layers: int = 0

    @property
    def bytes(self) -> float:
        return self.params * bytes_per_param(self.fmt)


class AttnGroup(Frozen):
    """Attention geometry of `layers` decoder layers of one kind.

    KV per token per layer: full/sliding store `kv_heads * (k_dim + v_dim)` elements, sharded by TP
    down to one head per rank; mla stores `latent_dim` replicated on every rank (its `k_dim`/`v_dim` are the
    up-projected heads prefill attends with); linear/mamba hold `state_elems` per sequence (sharded by TP)
    instead of per-token KV (a Gated DeltaNet group: `kv_heads` value heads of a k_dim x v_dim state)."""

    kind: AttnKind
    layers: int
    num_heads: int
    kv_heads: int = 0
    head_dim: int = 0
    k_dim: int = 0
    v_dim: int = 0
    latent_dim: int = 0  # MLA: compressed KV width incl. the decoupled RoPE key
    rope_dim: int = 0  # MLA: the RoPE part of latent_dim
    window: int | None = None
    state_elems: int = 0
    index_bytes_per_token: int = 0  # DSA indexer cache (DeepSeek-V3.2, GLM-5), fp8 + scales
    index_topk: int = 0  # DSA: context tokens each query attends to (config `index_topk`)
    index_heads: int = 0  # DSA: indexer query heads (config `index_n_heads`), replicated on every TP rank
    index_dim: int = 0  # DSA: indexer head width (config `index_head_dim`)
    kv_compress: int = 1  # compressed attention (DeepSeek-V4 `compress_ratios`): tokens per stored KV entry


class MoE(Frozen):
    num_experts: int
    experts_per_token: int
    shared_experts: int
    expert_intermediate: int
    shared_intermediate: int
    moe_layers: int
    dense_intermediate: int  # `intermediate_size` of the config (the dense MLP width where there is one)


class ModelArch(Frozen):
    """Everything the cost model needs about one checkpoint."""

    model: str
    architecture: str
    model_type: str
    num_layers: int
    hidden_size: int
    vocab_size: int
    max_context: int
    attention: Literal["mha", "gqa", "mqa", "mla"]
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    attn_groups: tuple[AttnGroup, ...]
    qk_norm_full_width: bool = False  # q/k RMSNorm over all heads (MiniMax-M2 `qk_norm_type: per_layer`), not per head
    moe: MoE | None = None
    dense_mlp_layers: int = 0  # dense MLP blocks in the decoder (MoE models: the dense layers; gemma-4: every layer)
    mlp_intermediate: int = 0  # dense MLP width (dense layers of dense models; MoE models: moe.dense_intermediate)
    weights: tuple[WeightGroup, ...]
    quant_block: tuple[int, int] | None = None
    quant_group_size: int | None = None
    kv_dtype: Literal["bf16", "fp8"] = "bf16"
    tie_word_embeddings: bool = False
    mtp_layers: int = 0
    mtp_params: int = 0
    mtp_bytes: float = 0.0
    vision_params: int = 0
    vision_bytes: float = 0.0
    remote_code: bool = False  # config.json declares `auto_map` (model code on the Hub; never run here)

    # ---- counts -------------------------------------------------------------------------------
    def group_params(self, *names: str) -> int:
        return sum(w.params for w in self.weights if w.name in names)

    @property
    def total_params(self) -> int:
        """Language model incl. embeddings, excl. MTP and vision."""
        return sum(w.params for w in self.weights)

    @property
    def active_params(self) -> int:
        """One token's forward pass: all but the routed experts, plus k/E of them; embeddings in full."""
        routed = self.group_params("routed_experts")
        if self.moe is None or routed == 0:
            return self.total_params
        share = self.moe.experts_per_token / self.moe.num_experts
        return self.total_params - routed + round(routed * share)

    @property
    def active_params_excl_embedding(self) -> int:
        """Active params without the input embedding table (gpt-oss card convention)."""
        return self.active_params - self.group_params("embed")

    @property
    def active_params_excl_embeddings(self) -> int:
        """Active params without input embedding and lm_head (MiniMax, Qwen-Next card convention)."""
        return self.active_params - self.group_params("embed", "lm_head")

    @property
    def weight_bytes(self) -> float:
        """Language-model weights at the checkpoint's formats, scales included (excl. MTP, vision)."""
        return sum(w.bytes for w in self.weights)

    @property
    def checkpoint_bytes(self) -> float:
        """What the repo holds: LM + MTP + vision tower."""
        return self.weight_bytes + self.mtp_bytes + self.vision_bytes

    @property
    def weight_dtype(self) -> str:
        """The checkpoint's headline dtype (`headline_dtype` of its weights)."""
        return headline_dtype(self.weights)

    @property
    def layer_kinds(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for g in self.attn_groups:
            key = f"{g.kind}_attention" if g.kind not in ("mamba",) else "mamba"
            kinds[key] = kinds.get(key, 0) + g.layers
        if self.moe is not None:
            kinds["moe_mlp"] = self.moe.moe_layers
            kinds["dense_mlp"] = self.dense_mlp_layers
        return kinds

    def kv_bytes_per_token(self, tp: int = 1, kv_bytes: float | None = None) -> float:
        """KV bytes one token adds on one GPU at TP=tp, full-context layers only (vLLM
        `layers/linear.py: QKVParallelLinear.__init__`, `v1/kv_cache_interface.py: FullAttentionSpec`,
        `mla_attention.py: MLAAttention.get_kv_cache_spec`): GQA `2*max(1, kv/tp)*head_dim*b` per layer;
        MLA `(kv_lora+rope)*b` replicated; windowed layers excluded (capped, see `window_kv_bytes_per_seq`)."""
        b = self.kv_elem_bytes if kv_bytes is None else kv_bytes
        return sum(g.layers * token_kv_bytes(g, tp, b) for g in self.attn_groups if g.window is None)

    def windowed_kv_bytes_per_token(self, tp: int = 1, kv_bytes: float | None = None) -> float:
        """KV bytes one token adds on one GPU in the sliding/chunked layers (held for `window` tokens only)."""
        b = self.kv_elem_bytes if kv_bytes is None else kv_bytes
        return sum(g.layers * token_kv_bytes(g, tp, b) for g in self.attn_groups if g.window is not None)

    def window_kv_bytes_per_seq(self, tp: int = 1, kv_bytes: float | None = None) -> float:
        """Capped KV of sliding/chunked layers per sequence (window tokens each)."""
        b = self.kv_elem_bytes if kv_bytes is None else kv_bytes
        return sum(g.layers * token_kv_bytes(g, tp, b) * (g.window or 0) for g in self.attn_groups
                   if g.window is not None)

    def state_bytes_per_seq(self, tp: int = 1, state_bytes: float = 2.0) -> float:
        """Linear-attention / mamba state per sequence (vLLM `mamba_utils.py: MambaStateShapeCalculator`),
        sharded by TP."""
        return sum(g.layers * g.state_elems * state_bytes / tp for g in self.attn_groups
                   if g.kind in ("linear", "mamba"))

    @property
    def kv_elem_bytes(self) -> float:
        return 1.0 if self.kv_dtype == "fp8" else 2.0


def token_kv_bytes(g: AttnGroup, tp: int, b: float) -> float:
    """KV bytes one token adds to one layer of `g` on one GPU at TP=tp: MLA latent (+ DSA index) on every
    rank, over `kv_compress` tokens when compressed (vLLM `deepseek_v4_attention.py`: one C4/C128 entry per
    4/128 tokens); GQA K and V of max(1, kv_heads/tp) heads (vLLM `QKVParallelLinear` replicates below one head)."""
    if g.kind == "mla":  # compressed attention stores one entry (and index key) per kv_compress tokens
        return (g.latent_dim * b + g.index_bytes_per_token) / g.kv_compress
    if g.kind in ("full", "sliding"):
        heads = max(1.0, g.kv_heads / tp)
        return heads * (g.k_dim + g.v_dim) * b
    return 0.0


def headline_dtype(weights: tuple[WeightGroup, ...]) -> str:
    """The format holding most of the weights' parameters: a checkpoint's headline dtype, or what
    `--weight-dtype` re-quantized it to."""
    by_fmt: dict[str, float] = {}
    for w in weights:
        by_fmt[w.fmt] = by_fmt.get(w.fmt, 0.0) + w.params
    return short_name(max(by_fmt, key=lambda f: by_fmt[f]))
