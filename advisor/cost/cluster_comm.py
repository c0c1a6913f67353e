"""Collective time on a cluster, the one entry the step model uses there (`cost/step.py: comm_fn`): a group inside
one node is timed by the node's own timer (`hardware/comm.py`, exactly as on one box); a group beyond one node, inside
an NVL72 rack or across the fabric between fast domains, by the scale-out model (`hardware/scaleout.py:
collective_time_us`, formulas and checks in docs/collectives-scaleout.md).

The step hands over (op, bytes, group size, fast domains spanned[, backend, MoE shape]); the group is spread evenly
over its domains (`Span.per_domain` = ceil(n / domains)), as the engines' rank orders place it (`plan.rank_layout`).
Wide-EP dispatch/combine across nodes (`collectives.A2A_DISPATCH`/`A2A_COMBINE`) is DeepEP's all-to-all under the
name each engine's printed command selects (`collectives.DEEPEP_BACKEND`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from advisor.cost.collectives import DEEPEP_BACKEND
from advisor.hardware.cluster import Cluster, Span
from advisor.hardware.collective_time import collective_time_us
from advisor.hardware.wide_ep import MoEShape

Comm = Callable[..., np.ndarray]


def group_span(cluster: Cluster, n: int, domains: int) -> Span:
    """n ranks spread evenly over `domains` fast domains, on as few nodes as that allows."""
    per = -(-n // domains)
    return Span(gpus=n, nodes=max(domains, -(-n // cluster.gpus_per_node)), domains=domains, per_domain=per)


def cluster_comm_fn(cluster: Cluster, engine: str, node_comm: Comm) -> Comm:
    """The step model's collective timer on `cluster`: (op, bytes, group size[, fast domains, backend, MoE shape
    (hidden, top-k, experts)]) -> seconds. `op` "dispatch"/"combine" is an expert all-to-all, what one rank sends."""
    physics = "vllm" if engine == "trtllm" else engine  # NCCL collectives: TensorRT-LLM's as vLLM's (`comm_fn`)

    def f(op: str, nbytes: np.ndarray, n: int, domains: int = 1, backend: str | None = None,
          moe: tuple[int, int, int] | None = None) -> np.ndarray:
        S = np.asarray(nbytes, dtype=float)
        if domains <= 1 and n <= cluster.gpus_per_node:
            return node_comm(op, S, n)
        span = group_span(cluster, n, domains)
        if op in ("dispatch", "combine"):
            assert moe is not None, "an expert all-to-all is timed per MoE shape"
            name = DEEPEP_BACKEND[engine] if backend == "deepep" else backend
            return np.asarray(collective_time_us(cluster, op, S, span, engine, name, moe=MoEShape(*moe))) * 1e-6
        return np.asarray(collective_time_us(cluster, op, S, span, physics)) * 1e-6

    return f
