"""Which experts a step's tokens reach: the distinct experts one GPU reads per MoE layer, and the (token, expert)
pairs on the busiest EP rank.

Expert popularity is skewed: expert i of E (by popularity) takes a share p_i = i^-s / sum_j j^-s of the routing
(Zipf, s = `ROUTING_SKEW`); a token picks it with q_i = min(1, k p_i), and T tokens touch
sum_i 1 - (1 - q_i)^T distinct experts (s = 0: uniform routing, E (1 - (1 - k/E)^T)). The skew reads fewer
distinct experts at a few dozen tokens than uniform routing; at one token it reads k, at many all E.
"""

from __future__ import annotations

from functools import cache

import numpy as np

# Zipf exponent of expert popularity. The routing NVIDIA's aiconfigurator predicts serving with: its models query
# the MoE tables at `workload_distribution` "power_law" as "power_law_1.01" (aiconfigurator_core/sdk/models/*.py),
# the collector's power-law router load (collector/helper.py `_generate_power_law_distribution`, re-implemented in
# scripts/kernel_routing.py); s = 0.8 gives that router's distinct experts within 9% (median |log ratio|, T 4-256
# on the gpt-oss-120b, Qwen3-235B, DeepSeek-V3, Qwen3.5 and Kimi shapes; s 0.7: 11%, 1.0: 15%).
ROUTING_SKEW = 0.8
_LOG_T = np.linspace(0.0, np.log(2.0 ** 24), 400)  # the tables' token grid, 1 to 16M tokens, ~4.3% apart
_STEP = float(_LOG_T[1])
_K_SPAN = 4096.0  # (E, k) packed as one key: E x 4096 + k (top-k far below it)


@cache
def _touched_table(experts: int, topk: float, skew: float) -> np.ndarray:
    """Distinct experts of `experts` touched at the grid's token counts, exactly (the sum over experts)."""
    p = np.arange(1, experts + 1, dtype=float) ** -skew
    q = np.minimum(1.0, topk * p / p.sum())
    table = 1.0 - np.exp(np.exp(_LOG_T)[:, None] * np.log1p(-np.minimum(q, 1 - 1e-15))[None, :])
    return table.sum(axis=1)


def touched_experts(experts: np.ndarray, topk: np.ndarray, ep: np.ndarray, tokens: np.ndarray,
                    skew: float = ROUTING_SKEW) -> np.ndarray:
    """Distinct experts one GPU reads per MoE layer: (1 / EP) sum_i 1 - (1 - q_i)^T over the model's E experts
    (module docstring; vLLM `fused_moe.py` reads every expert that any of the T tokens picks), linear in log T
    between the points of a per-(E, k) table."""
    shape = np.broadcast_shapes(np.shape(experts), np.shape(topk), np.shape(ep), np.shape(tokens))
    key = np.maximum(np.asarray(experts, dtype=float), 1) * _K_SPAN + np.asarray(topk, dtype=float)
    keys, inverse = np.unique(key, return_inverse=True)  # per plan, before the tokens' axes broadcast
    tables = np.stack([_touched_table(int(k // _K_SPAN), float(k % _K_SPAN), skew) for k in keys])
    x = np.log(np.maximum(np.broadcast_to(tokens, shape), 1.0)) / _STEP  # the grid is even in log T
    i = np.minimum(x.astype(np.intp), _LOG_T.size - 2)
    f = np.minimum(x - i, 1.0)
    row = np.broadcast_to(inverse.reshape(np.shape(key)), shape)
    return (tables[row, i] * (1 - f) + tables[row, i + 1] * f) / ep


def busiest_rank_pairs(topk: np.ndarray, ep: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """(token, expert) pairs on the busiest of EP ranks: mean T k / EP plus sqrt(2 mean ln EP), the expected
    maximum of EP Poisson loads (static expert placement, EPLB off)."""
    mean = tokens * topk / ep
    return mean + np.sqrt(2 * mean * np.log(np.maximum(ep, 1)))
