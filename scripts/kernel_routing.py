"""Routing of the measured MoE kernel rows: what the aiconfigurator vLLM MoE collector fed the kernel
(ai-dynamo/aiconfigurator @095f58a5, collector/helper.py `balanced_logits`,
`_generate_power_law_distribution`; collector/vllm/collect_moe.py), re-implemented with numpy so that each
row's active experts and (token, expert) pairs on the measured rank are known.

The collector feeds synthetic router logits to vLLM's FusedMoE module, which routes them with the
model's own router (softmax/sigmoid top-k; DeepSeek-V3 shapes use grouped top-k, 8 groups, top-4
groups).  Logits are softmax(one-hot counts), so many experts tie; ties are resolved to the lowest
expert index (assumption: vLLM's top-k kernels scan experts in order).  EP rank 0 owns experts
[0, E/ep); the power-law generator swaps the busiest EP group onto rank 0.

Per (T, E, k, ep, distribution, grouping) this returns, for EP rank 0:
  n_act  active local experts (>= 1 token), pairs  local token-expert pairs, cmax  busiest expert.
Power law is stochastic (5 draws averaged per measured row): features are means over R draws.
"""
from __future__ import annotations

import math

import numpy as np

# (hidden, inter, topk, experts) -> (n_group, topk_group) for grouped-topk routers with n_group > 1
GROUPED = {(7168, 2048, 8, 256): (8, 4)}


def balanced_sel(T: int, E: int, k: int) -> np.ndarray:
    """[T, k] expert ids of helper.balanced_logits (before the router)."""
    stride = math.ceil(E / k)
    i = np.arange(T)[:, None].astype(float)
    j = np.arange(k)[None, :].astype(float)
    if T >= stride:
        sel = (i + j * stride) % E
    else:
        sel = (i * stride / T + j * stride) % E
    return np.floor(sel).astype(np.int64)


def power_law_counts(T: int, E: int, k: int, ep: int, alpha: float, rng) -> np.ndarray:
    """helper._generate_power_law_distribution: tokens per expert (busiest EP group moved to rank 0)."""
    lo, hi = (1.0, T * 0.8) if T * k > E else (0.01, 2.0)
    u = rng.random(E)
    w = ((hi ** (1 - alpha) - lo ** (1 - alpha)) * u + lo ** (1 - alpha)) ** (1 / (1 - alpha))
    target = T * k
    c = np.round(w / w.sum() * target).astype(np.int64)
    delta = target - c.sum()
    if delta != 0:
        order = np.lexsort((rng.random(E), -c))  # torch.argsort on CUDA: ties in no fixed order
        if delta > 0:
            for i in range(delta):
                c[order[i % E]] += 1
        else:
            for i in range(-delta):
                idx = order[-(i % E) - 1]
                if c[idx] > 0:
                    c[idx] -= 1
                else:
                    c[np.argmax(c)] -= 1
    g = E // ep
    sums = c.reshape(ep, g).sum(1)
    mx = int(np.argmax(sums))
    if mx != 0:
        r = c.reshape(ep, g).copy()
        r[[0, mx]] = r[[mx, 0]]
        c = r.reshape(-1)
    return c


def power_law_sel(T: int, E: int, k: int, ep: int, alpha: float, rng) -> np.ndarray:
    c = power_law_counts(T, E, k, ep, alpha, rng)
    order = np.lexsort((rng.random(E), -c))
    assign = np.repeat(order, c[order])
    return assign.reshape(k, T).T


def route(sel: np.ndarray, E: int, k: int, grouped: tuple[int, int] | None) -> np.ndarray:
    """Router on logits = softmax(one-hot counts of `sel`): returns [T, k] chosen experts."""
    T = sel.shape[0]
    cnt = np.zeros((T, E), np.int64)
    np.add.at(cnt, (np.repeat(np.arange(T), sel.shape[1]), sel.reshape(-1)), 1)
    score = cnt.astype(float)
    if grouped is not None:
        ng, kg = grouped
        gs = np.sort(score.reshape(T, ng, E // ng), axis=2)[:, :, -2:].sum(2)  # top-2 sum per group
        gsel = np.argsort(-gs, axis=1, kind="stable")[:, :kg]
        mask = np.zeros((T, ng), bool)
        np.put_along_axis(mask, gsel, True, axis=1)
        score = np.where(np.repeat(mask, E // ng, axis=1), score, -1.0)
    return np.argsort(-score, axis=1, kind="stable")[:, :k]


def rank0_features(chosen: np.ndarray, E: int, ep: int) -> tuple[float, float, float]:
    loc = chosen[chosen < E // ep]
    c = np.bincount(loc, minlength=E // ep)
    return float((c > 0).sum()), float(c.sum()), float(c.max() if c.size else 0)


_cache: dict = {}


def features(T: int, h: int, inter: int, k: int, E: int, ep: int, dist: str, R: int = 8, seed: int = 0):
    """(n_act, pairs, cmax) on EP rank 0, averaged over R draws for power law."""
    key = (T, h, inter, k, E, ep, dist)
    if key in _cache:
        return _cache[key]
    grouped = GROUPED.get((h, inter, k, E))
    if dist == "balanced":
        out = rank0_features(route(balanced_sel(T, E, k), E, k, grouped), E, ep)
    else:
        alpha = float(dist.split("_")[-1])
        rng = np.random.default_rng(seed + 7919 * T + 31 * E + ep)
        acc = np.zeros(3)
        for _ in range(R):
            acc += rank0_features(route(power_law_sel(T, E, k, ep, alpha, rng), E, k, grouped), E, ep)
        out = tuple(acc / R)
    _cache[key] = out
    return out
