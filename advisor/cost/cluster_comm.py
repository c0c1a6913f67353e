"""Collective time on a cluster, the one entry the step model uses there (`cost/step.py: comm_fn`): a group inside
one node is timed by the node's own timer (`hardware/comm.py`, exactly as on one box); a group beyond one node, inside
an NVL72 rack or across the fabric between fast domains, by the scale-out model (`hardware/scaleout.py:
collective_time_us`, formulas and checks in docs/collectives-scaleout.md).

The step hands over (op, bytes, group size, fast domains spanned[, backend, MoE shape]); the group is spread evenly
over its domains (`Span.per_domain` = ceil(n / domains)), as the engines' rank orders place it (`plan.rank_layout`).
Wide-EP dispatch/combine across nodes (`collectives.A2A_DISPATCH`/`A2A_COMBINE`) is DeepEP's all-to-all under the
name each engine's printed command selects (`collectives.DEEPEP_BACKEND`).

TensorRT-LLM's allreduce over trays of one NVLink rack is its MNNVL kernel, not NCCL: `AllReduce` (strategy AUTO)
tries `MNNVLAllReduce` first when the TP group spans nodes of a multi-node NVLink domain on aarch64
(`tensorrt_llm/_torch/distributed/ops.py: MNNVLAllReduce.is_mnnvl`: `mapping.is_multi_node()`,
`MnnvlMemory.supports_mnnvl()`, aarch64: GB200/GB300), a Lamport allreduce through fabric memory, one-shot when
`tokens x hidden x group x bytes <= 64 x 1024 x 8` and two-shot above (`MNNVLAllReduce.get_required_workspace_size`,
"should match the heuristic in allreduceOp.cpp"); its workspace grows with the message, so no NCCL fallback.
Each shot is timed as the node's kernels are (`comm.link_allreduce_us`: one-shot `lat + (n - 1) S / L`, two-shot
`2 lat + 2 (n - 1)/n S / L` at the NVLink rate L, `lat` the profile's measured in-engine kernel floor).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from advisor.cost.collectives import DEEPEP_BACKEND
from advisor.hardware.cluster import Cluster, Span
from advisor.hardware.collective_time import collective_time_us
from advisor.hardware.comm import find_term
from advisor.hardware.nvswitch import link_gbps
from advisor.hardware.wide_ep import MoEShape

Comm = Callable[..., np.ndarray]
MNNVL_ONE_SHOT_BYTES = 64 * 1024 * 8  # S x group size up to which MNNVLAllReduce runs one-shot (module docstring)


def group_span(cluster: Cluster, n: int, domains: int) -> Span:
    """n ranks spread evenly over `domains` fast domains, on as few nodes as that allows."""
    per = -(-n // domains)
    return Span(gpus=n, nodes=max(domains, -(-n // cluster.gpus_per_node)), domains=domains, per_domain=per)


def mnnvl_allreduce(cluster: Cluster, n: int) -> Comm | None:
    """TensorRT-LLM's MNNVL allreduce on n ranks of one NVLink rack beyond a tray (module docstring): microseconds of
    S bytes, one-shot `lat + (n - 1) S / L` or two-shot `2 lat + 2 (n - 1)/n S / L`; None where it does not run (no
    NVLink domain across nodes, or no measured in-engine kernel)."""
    hw = cluster.node
    custom = find_term(hw, "allreduce", n, "vllm_custom")
    link = link_gbps(hw)
    if hw.topology.nvlink_domain_size <= hw.topology.num_gpus or custom is None or link <= 0:
        return None
    lat = custom.small_latency_us

    def timed(S: np.ndarray) -> np.ndarray:
        one = lat + S * (n - 1) / (link * 1e3)
        two = 2 * lat + 2 * S * (n - 1) / n / (link * 1e3)
        return np.where(S * n <= MNNVL_ONE_SHOT_BYTES, one, two)

    return timed


def cluster_comm_fn(cluster: Cluster, engine: str, node_comm: Comm) -> Comm:
    """The step model's collective timer on `cluster`: (op, bytes, group size[, fast domains, backend, MoE shape
    (hidden, top-k, experts)]) -> seconds. `op` "dispatch"/"combine" is an expert all-to-all, what one rank sends."""
    physics = "vllm" if engine == "trtllm" else engine  # NCCL collectives: TensorRT-LLM's as vLLM's (`comm_fn`)
    timers: dict[tuple[int, str], Comm | None] = {}

    def f(op: str, nbytes: np.ndarray, n: int, domains: int = 1, backend: str | None = None,
          moe: tuple[int, int, int] | None = None) -> np.ndarray:
        S = np.asarray(nbytes, dtype=float)
        span = group_span(cluster, n, domains)
        if op in ("dispatch", "combine"):
            assert moe is not None, "an expert all-to-all is timed per MoE shape"
            name = DEEPEP_BACKEND[engine] if backend == "deepep" else backend
            return np.asarray(collective_time_us(cluster, op, S, span, engine, name, moe=MoEShape(*moe))) * 1e-6
        if domains <= 1 and n <= cluster.gpus_per_node:
            return node_comm(op, S, n)
        if (engine, op) == ("trtllm", "allreduce") and span.domains == 1:
            if (n, "mnnvl") not in timers:
                timers[n, "mnnvl"] = mnnvl_allreduce(cluster, n)
            if (mnnvl := timers[n, "mnnvl"]) is not None:
                return mnnvl(S) * 1e-6
        return np.asarray(collective_time_us(cluster, op, S, span, physics)) * 1e-6

    return f
