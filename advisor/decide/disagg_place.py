"""Where the workers of a disaggregated deployment sit and the ports they take (`decide/disagg_command.py`,
`decide/disagg_dynamo.py`): units side by side, each unit's prefill workers first, as `cost/disagg_transfer.py:
pool_link` places them; ports are the engines' documented defaults and examples, one per worker on its host."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.cost.disagg import DisaggPlan
from advisor.cost.sweep import Case
from advisor.decide.command import TRTLLM_OPTIONS_FILE
from advisor.hardware.cluster import Cluster

ROUTER_PORT = 8000  # the port clients talk to (every engine's PD router example uses 8000)
PORTS = {"prefill": 8100, "decode": 8200}  # worker ports (vLLM's NIXL guide: prefiller 8100, decoder 8200)
NIXL_SIDE_CHANNEL = 5600  # VLLM_NIXL_SIDE_CHANNEL_PORT's default
BOOTSTRAP = 8998  # SGLang's --disaggregation-bootstrap-port and VLLM_MOONCAKE_BOOTSTRAP_PORT default
VLLM_CONNECTOR = {"nixl": "NixlConnector", "mooncake": "MooncakeConnector", "p2pnccl": "P2pNcclConnector"}
TRT_BACKEND = {"default": "DEFAULT", "ucx": "UCX", "nixl": "NIXL", "mpi": "MPI"}
TRT_FILES = {"prefill": "ctx_" + TRTLLM_OPTIONS_FILE, "decode": "gen_" + TRTLLM_OPTIONS_FILE}
DISAGG_CONFIG = "disagg_config.yaml"


@dataclass(frozen=True)
class Worker:
    """One worker of the deployment: its role, its index in its pool, its first GPU (deployment-wide) and its case;
    `side_channel`: its first NIXL handshake port (vLLM)."""

    role: str
    index: int
    first: int
    case: Case
    side_channel: int = NIXL_SIDE_CHANNEL

    @property
    def gpus(self) -> int:
        return self.case.plan.gpus

    @property
    def port(self) -> int:
        return PORTS[self.role] + self.index

    @property
    def bootstrap(self) -> int:
        return BOOTSTRAP + self.index


def place(plan: DisaggPlan, replicas: int = 1) -> list[Worker]:
    """Every worker of `replicas` copies of the deployment, unit after unit, each unit's prefill workers first
    (the placement `cost/disagg_transfer.py: pool_link` costs)."""
    out: list[Worker] = []
    gpu, count, port = 0, {"prefill": 0, "decode": 0}, NIXL_SIDE_CHANNEL
    for _ in range(replicas):
        for pool in (plan.prefill, plan.decode):
            for _ in range(pool.workers):
                out.append(Worker(pool.role, count[pool.role], gpu, pool.case, port))
                count[pool.role] += 1
                gpu += pool.plan.gpus
                port += pool.plan.dp
    return out


def host(cluster: Cluster, node: int) -> str:
    """A node's address: the loopback on one node, else a placeholder to replace (`NODE<n>_IP`)."""
    return "127.0.0.1" if not cluster.multi_node else f"NODE{node}_IP"
