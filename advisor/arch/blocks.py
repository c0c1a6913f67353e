"""Parameter counts of one decoder block, from config fields (HF modeling files' shapes).

Each function returns {(group, shard, linear): params}; `linear` marks modules a quantization scheme
may convert (q/k/v/o, MLP and expert projections), the rest (norms, routers, biases) stay high precision.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.arch.fields import Cfg, ConfigError

Parts = dict[tuple[str, str, bool], int]


@dataclass(frozen=True)
class AttnGeom:
    heads: int
    kv_heads: int
    head_dim: int
    v_dim: int
    k_eq_v: bool = False


def attn_geom(cfg: Cfg, kind: str) -> AttnGeom:
    """Geometry of a softmax-attention layer; `head_dim` wins over hidden/heads. Separate SWA (MiMo
    `swa_*`) and global (gemma-4 `global_head_dim`, `num_global_key_value_heads`) geometries."""
    hidden = cfg.int("hidden_size")
    heads = cfg.int("num_attention_heads")
    kv = cfg.int("num_key_value_heads", heads)
    hd = cfg.int("head_dim", 0, minimum=0) or cfg.int("attention_head_dim", 0, minimum=0) or hidden // heads
    vd = cfg.int("v_head_dim", hd)
    if kind == "sliding" and cfg.has("swa_num_attention_heads"):
        heads = cfg.int("swa_num_attention_heads")
        kv = cfg.int("swa_num_key_value_heads", heads)
        hd = cfg.int("swa_head_dim", hd)
        vd = cfg.int("swa_v_head_dim", hd)
    if kind == "full" and cfg.has("global_head_dim"):
        hd = vd = cfg.int("global_head_dim")
        kv = cfg.int("num_global_key_value_heads", kv)
        _check_groups(cfg, heads, kv, "num_global_key_value_heads")
        return AttnGeom(heads, kv, hd, vd, k_eq_v=cfg.bool("attention_k_eq_v"))
    _check_groups(cfg, heads, kv, "swa_num_key_value_heads" if kind == "sliding" and cfg.has(
        "swa_num_attention_heads") else "num_key_value_heads")
    return AttnGeom(heads, kv, hd, vd)


def _check_groups(cfg: Cfg, heads: int, kv: int, key: str) -> None:
    """GQA shares each KV head among heads/kv query heads, so kv must divide heads (HF `repeat_kv`)."""
    if heads % kv:
        raise ConfigError(f"{cfg.where}: field {key!r} = {kv} does not divide the {heads} attention heads")


def softmax_attention(cfg: Cfg, g: AttnGeom) -> Parts:
    """q,k,v,o projections (+ output gate, biases, per-layer qk-norm)."""
    h = cfg.int("hidden_size")
    gate = 2 if cfg.bool("attn_output_gate") else 1
    q = h * g.heads * g.head_dim * gate
    kv = h * g.kv_heads * g.head_dim + (0 if g.k_eq_v else h * g.kv_heads * g.v_dim)
    o = g.heads * g.v_dim * h
    small = 0
    if cfg.bool("attention_bias"):
        small += g.heads * g.head_dim + g.kv_heads * (g.head_dim + g.v_dim) + h
    if cfg.str("qk_norm_type") == "per_layer":  # MiniMax-M2: norm over the full q/k width
        small += g.heads * g.head_dim + g.kv_heads * g.head_dim
    elif cfg.bool("use_qk_norm") or cfg.has("qk_norm_type"):
        small += 2 * g.head_dim
    return {("attn", "tp", True): q + kv + o, ("attn_norms", "replicated", False): small}


def block_sparse_index(cfg: Cfg) -> Parts:
    """MiniMax Sparse Attention index projections of a block-sparse layer (`sparse_attention_config`:
    index_q_proj H -> index_heads*index_dim, index_k_proj H -> index_dim; weight names from
    nvidia/MiniMax-M3-NVFP4's quantized_layers). {} when the config has no block-sparse attention."""
    sparse = cfg.sub("sparse_attention_config")
    if sparse is None or not sparse.bool("use_sparse_attention", True):
        return {}
    h = cfg.int("hidden_size")
    heads, dim = sparse.int("sparse_num_index_heads"), sparse.int("sparse_index_dim")
    return {("indexer", "replicated", True): h * heads * dim + h * dim}


def mla_attention(cfg: Cfg, indexer: bool = True) -> Parts:
    """DeepSeek MLA (`deepseek_v2.py:DeepseekV2MLAAttention`): q_a/kv_a down-projections replicated
    (`disable_tp=True`), q_b/kv_b/o sharded by heads; DSA indexer (V3.2, GLM-5) replicated."""
    h = cfg.int("hidden_size")
    heads = cfg.int("num_attention_heads")
    kv_rank = cfg.int("kv_lora_rank")
    q_rank = cfg.opt_int("q_lora_rank")
    rope = cfg.int("qk_rope_head_dim")
    nope = cfg.int("qk_nope_head_dim")
    v = cfg.int("v_head_dim")
    qk = nope + rope
    down = h * (kv_rank + rope) + (h * q_rank if q_rank else 0)
    sharded = (q_rank * heads * qk if q_rank else h * heads * qk) + kv_rank * heads * (nope + v) + heads * v * h
    if cfg.bool("mla_use_output_gate"):  # Kimi-Linear MLA: sigmoid output gate g_proj, H -> heads * v
        sharded += h * heads * v
    norms = kv_rank + (q_rank or 0)
    parts: Parts = {("attn", "tp", True): sharded, ("attn_replicated", "replicated", True): down,
                    ("attn_norms", "replicated", False): norms}
    if cfg.has("index_n_heads") and indexer:
        ih, idim = cfg.int("index_n_heads"), cfg.int("index_head_dim")
        parts[("indexer", "replicated", True)] = (q_rank or h) * ih * idim + h * idim + h * ih
        parts[("attn_norms", "replicated", False)] += 2 * idim
    return parts


def gdn_attention(cfg: Cfg) -> tuple[Parts, int]:
    """Gated DeltaNet (Qwen3-Next/3.5, `gdn_linear_attn.py`): params and state elements per sequence
    (`mamba_utils.py:gated_delta_net_state_shape`: ssm nv*dv*dk + conv (2*nk*dk + nv*dv)*(kernel-1))."""
    h = cfg.int("hidden_size")
    nk, nv = cfg.int("linear_num_key_heads"), cfg.int("linear_num_value_heads")
    dk, dv = cfg.int("linear_key_head_dim"), cfg.int("linear_value_head_dim")
    kernel = cfg.int("linear_conv_kernel_dim", 4)
    conv_dim = 2 * nk * dk + nv * dv
    proj = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + nv * dv * h
    small = conv_dim * kernel + 2 * nv + dv
    state = nv * dv * dk + conv_dim * (kernel - 1)
    return {("linear_attn", "tp", True): proj, ("attn_norms", "replicated", False): small}, state


def kda_attention(cfg: Cfg) -> tuple[Parts, int]:
    """Kimi Delta Attention (Kimi-Linear `linear_attn_config`; weight names as in Kimi-K3's checkpoint,
    `self_attn.{q,k,v}_proj, {q,k,v}_conv1d, f_a_proj, f_b_proj, b_proj, g_proj, A_log, dt_bias, o_norm,
    o_proj`): P = heads * head_dim; q/k/v 3*H*P, depthwise short convs 3*P*kernel, low-rank decay gate
    H*d + d*P, beta H*heads, output gate H*P (full rank: `use_full_rank_gate`), o_proj P*H. State per
    sequence: heads d x d plus the conv windows 3*P*(kernel-1) (vLLM `mamba_utils.py: kda_state_shape`)."""
    lin = cfg.sub("linear_attn_config") or cfg
    h = cfg.int("hidden_size")
    heads, d = lin.int("num_heads"), lin.int("head_dim")
    kernel = lin.int("short_conv_kernel_size", 4)
    p = heads * d
    gate = h * p if lin.bool("use_full_rank_gate") else h * d + d * p
    proj = 3 * h * p + h * d + d * p + h * heads + gate + p * h
    small = 3 * p * kernel + heads + p + d
    return {("linear_attn", "tp", True): proj, ("attn_norms", "replicated", False): small}, \
        heads * d * d + 3 * p * (kernel - 1)


def lightning_attention(cfg: Cfg, g: AttnGeom) -> tuple[Parts, int]:
    """MiniMax-Text-01 lightning attention: qkv + gate + out projections; state heads*d*d per sequence
    (`mamba_utils.py:linear_attention_state_shape`)."""
    h = cfg.int("hidden_size")
    proj = h * g.heads * g.head_dim * 4
    return {("linear_attn", "tp", True): proj, ("attn_norms", "replicated", False): g.heads * g.head_dim}, \
        g.heads * g.head_dim * g.head_dim


def mamba2(cfg: Cfg) -> tuple[Parts, int]:
    """Mamba-2 mixer (Nemotron-H): in_proj H*(2*I + 2*G*N + heads), conv, out_proj I*H; state per
    sequence heads*head_dim*N + conv (I + 2*G*N)*(kernel-1)."""
    h = cfg.int("hidden_size")
    heads, hd = cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim")
    n, groups = cfg.int("ssm_state_size"), cfg.int("n_groups", 1)
    kernel = cfg.int("conv_kernel", 4)
    inner = heads * hd
    conv_dim = inner + 2 * groups * n
    proj = h * (2 * inner + 2 * groups * n + heads) + inner * h
    small = conv_dim * (kernel + 1) + 3 * heads + inner
    return {("mamba", "tp", True): proj, ("attn_norms", "replicated", False): small}, \
        heads * hd * n + conv_dim * (kernel - 1)


def _gated(cfg: Cfg) -> int:
    act = cfg.str("mlp_hidden_act") or cfg.str("hidden_act") or cfg.str("hidden_activation")
    return 2 if act == "relu2" else 3  # relu2 MLPs (Nemotron-H) have no gate projection


def dense_mlp(cfg: Cfg) -> Parts:
    h = cfg.int("hidden_size")
    inter = cfg.int("intermediate_size_mlp", 0, minimum=0) or cfg.int("intermediate_size")
    return {("dense_mlp", "tp", True): _gated(cfg) * h * inter}


def expert_intermediate(cfg: Cfg) -> int:
    return cfg.int("moe_intermediate_size", 0, minimum=0) or cfg.int("intermediate_size")


def latent_size(cfg: Cfg) -> int:
    """LatentMoE: routed experts run in a narrower latent width (Nemotron-3 `moe_latent_size`, Kimi-K3
    `routed_expert_hidden_size`); 0 = experts at the hidden size."""
    return cfg.int("moe_latent_size", 0, minimum=0) or cfg.int("routed_expert_hidden_size", 0, minimum=0)


def shared_intermediate(cfg: Cfg) -> int:
    """Total intermediate width of the shared expert(s): DeepSeek `n_shared_experts * moe_intermediate`,
    Qwen `shared_expert_intermediate_size`, MiniMax `shared_intermediate_size`; Llama-4's MoE always has
    one shared expert of `intermediate_size` (transformers `Llama4TextMoe.shared_expert`)."""
    if cfg.has("moe_shared_expert_intermediate_size"):  # Nemotron-3: one shared expert of this width
        return cfg.int("moe_shared_expert_intermediate_size", minimum=0)
    for key in ("n_shared_experts", "num_shared_experts"):  # Kimi-K3 renames n_shared_experts
        if cfg.has(key):
            return cfg.int(key, minimum=0) * expert_intermediate(cfg)
    for key in ("shared_expert_intermediate_size", "shared_intermediate_size", "share_expert_dim"):
        if cfg.has(key):
            return cfg.int(key, minimum=0)
    if cfg.has("interleave_moe_layer_step"):
        return cfg.int("intermediate_size")
    return 0


def moe_block(cfg: Cfg, experts: int) -> Parts:
    """Routed experts (3*H*I each, 2*H*I for relu2), shared expert(s) with their gate, router H*E (+bias).
    LatentMoE (`latent_size`): the router reads the hidden state, a down-projection H*L feeds experts of
    width L (3*L*I each) and an up-projection L*H returns (Nemotron-3 `fc1_latent_proj`/`fc2_latent_proj`,
    Kimi-K3 `routed_expert_down_proj`/`routed_expert_up_proj` + `routed_expert_norm`); the shared expert
    stays at H. The latent projections are held whole on every rank (they feed the expert dispatch)."""
    h = cfg.int("hidden_size")
    inter = expert_intermediate(cfg)
    latent = latent_size(cfg)
    routed = experts * _gated(cfg) * (latent or h) * inter
    small = h * experts + experts
    shared = shared_intermediate(cfg)
    parts: Parts = {("routed_experts", "expert", True): routed, ("router", "replicated", False): small}
    if latent:
        parts[("moe_latent", "replicated", True)] = 2 * h * latent
        small += latent if cfg.bool("latent_moe_use_norm") else 0
        parts[("router", "replicated", False)] = small
    if shared:
        parts[("shared_experts", "tp", True)] = _gated(cfg) * h * shared
        if cfg.has("shared_expert_intermediate_size"):
            parts[("router", "replicated", False)] += h  # shared_expert_gate
    return parts
