"""The commands of a deployment that spans several nodes: one `Launch` per node (or one launcher), each engine's own
multi-node flags, every one cited where it is defined.

- A plan that fits one node runs as independent copies, one server per node (vLLM `docs/serving/
  data_parallel_deployment.md`, External Load Balancing: "each deployed server is fully independent"), behind any
  HTTP load balancer.
- vLLM, attention-DP/EP across nodes (PP 1, each DP rank inside a node): its data-parallel launcher, one `vllm serve`
  per node with `--data-parallel-size-local`, `--data-parallel-address`, `--data-parallel-rpc-port`, and on the other
  nodes `--data-parallel-start-rank` and `--headless` (`docs/serving/data_parallel_deployment.md`, Internal Load
  Balancing); EP across nodes over GPUDirect RDMA with `--all2all-backend deepep_low_latency` (`docs/serving/
  expert_parallel_deployment.md`: DeepEP for multi-node, low-latency mode for decode).
- vLLM, a replica that spans nodes (PP across nodes, or TP across an NVL72 rack's trays): a Ray cluster (`ray start
  --head` on node 0, `ray start --address` on the others) and one `vllm serve ... --distributed-executor-backend ray`
  on node 0 (`docs/serving/parallelism_scaling.md`); with DP, `--data-parallel-backend ray` and
  `VLLM_RAY_DP_PACK_STRATEGY=span` ("when a single DP group requires multiple nodes", data_parallel_deployment.md).
- SGLang: the same `launch_server` on every node with `--nnodes`, `--node-rank`, `--dist-init-addr`
  (`python/sglang/srt/server_args.py`); EP across nodes over RDMA with `--moe-a2a-backend deepep --deepep-mode auto`
  (`docs/advanced_features/expert_parallelism.md`: "Large-scale EP deployments", normal mode for prefill and
  low-latency for decode under `auto`).
- TensorRT-LLM: one Slurm launch of every rank through `trtllm-llmapi-launch` (`docs/source/commands/trtllm-serve/
  trtllm-serve.rst`, "Multi-Node with Slurm": `srun -N 2 --ntasks 16 --ntasks-per-node=8 --mpi=pmix ...
  trtllm-llmapi-launch trtllm-serve ...`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.cost.collectives import DEEPEP_BACKEND, deepep_exchange
from advisor.decide.launch import Launch

if TYPE_CHECKING:
    from advisor.cost.engine_args import EngineArgs
    from advisor.cost.plan import Plan
    from advisor.hardware.cluster import Cluster

HEAD = "HEAD_NODE_IP"  # placeholder: the first node's address, reachable from the others
VLLM_DP_RPC_PORT = "13345"  # any free port; the docs' example value
SGLANG_DIST_PORT = "5000"
RAY_PORT = "6379"
Files = tuple[tuple[str, str], ...]


def multinode_launches(plan: Plan, args: EngineArgs, cluster: Cluster, argv: list[str], files: Files,
                       moe: bool, env: tuple[tuple[str, str], ...] = ()) -> tuple[tuple[Launch, ...], list[str]]:
    """The launches of `argv` (the engine's one-node command for `plan`, `env` its one-node environment) on
    `cluster`, and notes."""

    gpn = cluster.gpus_per_node
    used = cluster.nodes_for(plan.gpus)
    if used == 1:
        local = tuple(range(plan.gpus))
        if env:
            local = tuple(int(g) for g in dict(env)["CUDA_VISIBLE_DEVICES"].split(","))
        copies = cluster.nodes
        launches = tuple(Launch("replica", i, local, tuple(argv), env, files) for i in range(copies))
        more = f" (each node holds {gpn // plan.gpus}: start the others on its other GPUs)" if 2 * plan.gpus <= gpn \
            else ""
        return launches, [f"{copies} independent servers, one per node{more}: put an HTTP load balancer in front"]
    deepep = moe and deepep_exchange(plan, cluster, args.engine) and args.moe_a2a_backend != "deepep"  # once
    notes = [f"replace {HEAD} with node 0's address, reachable from every node"]
    if args.engine == "sglang":
        extra = ["--moe-a2a-backend", str(DEEPEP_BACKEND["sglang"]), "--deepep-mode", "auto"] if deepep else []
        return tuple(Launch("node", i, tuple(range(gpn)), tuple([*argv, *extra, "--nnodes", str(used), "--node-rank",
                                                                   str(i), "--dist-init-addr",
                                                                   f"{HEAD}:{SGLANG_DIST_PORT}"]), (), files)
                     for i in range(used)), notes
    if args.engine == "trtllm":
        srun = ["srun", "-N", str(used), "--ntasks", str(plan.gpus), "--ntasks-per-node", str(gpn), "--mpi=pmix",
                "trtllm-llmapi-launch"]
        notes = [f"one Slurm job over {used} nodes starts every rank; the files are read from the shared working "
                 "directory"]
        return (Launch("launcher", 0, tuple(range(gpn)), tuple([*srun, *argv]), (), files),), notes
    return _vllm(plan, cluster, argv, files, used, deepep, notes)


def _vllm(plan: Plan, cluster: Cluster, argv: list[str], files: Files, used: int, deepep: bool,
          notes: list[str]) -> tuple[tuple[Launch, ...], list[str]]:

    gpn = cluster.gpus_per_node
    backend = ["--all2all-backend", str(DEEPEP_BACKEND["vllm"])] if deepep else []
    if plan.pp == 1 and plan.dp > 1 and gpn % plan.tp == 0:
        per = gpn // plan.tp  # DP ranks on one node
        out = []
        for i in range(used):
            head = [] if i == 0 else ["--data-parallel-start-rank", str(i * per), "--headless"]
            out.append(Launch("node", i, tuple(range(gpn)), tuple([
                *argv, *backend, "--data-parallel-size-local", str(min(per, plan.dp - i * per)),
                "--data-parallel-address", HEAD, "--data-parallel-rpc-port", VLLM_DP_RPC_PORT, *head]), (), files))
        return tuple(out), notes
    ray = [Launch("ray-head", 0, tuple(range(gpn)), ("ray", "start", "--head", f"--port={RAY_PORT}"))]
    ray += [Launch("ray-worker", i, tuple(range(gpn)), ("ray", "start", f"--address={HEAD}:{RAY_PORT}", "--block"))
            for i in range(1, used)]
    if plan.dp > 1:
        serve = [*argv, *backend, "--data-parallel-backend", "ray"]
        env: tuple[tuple[str, str], ...] = (("VLLM_RAY_DP_PACK_STRATEGY", "span"),)
    else:
        serve, env = [*argv, *backend, "--distributed-executor-backend", "ray"], ()
    notes.append("start Ray on every node first (ray-head, then ray-worker), then the server on node 0")
    return (*ray, Launch("server", 0, tuple(range(gpn)), tuple(serve), env, files)), notes
