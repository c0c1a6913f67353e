"""A disaggregated deployment over several nodes, launched by NVIDIA Dynamo: a frontend (role "router") on node 0 and
every worker as Dynamo's wrapper of its engine, registered through etcd and NATS on node 0 (`ETCD_ENDPOINTS`,
`NATS_SERVER`: Dynamo `docs/backends/vllm/multi-node.md`, "Start NATS/ETCD on Head Node").

- Frontend: `python3 -m dynamo.frontend --http-port 8000` (`examples/backends/*/launch/disagg.sh`).
- vLLM: `python3 -m dynamo.vllm --model M <vLLM engine flags> --disaggregation-mode prefill|decode
  --kv-transfer-config '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'` (`examples/backends/vllm/launch/
  disagg.sh`); a worker whose DP ranks span nodes runs one process per DP rank, `--data-parallel-rank R
  --data-parallel-address HEAD --data-parallel-rpc-port 13345` (`examples/backends/vllm/launch/dsr1_dep.sh`); one
  whose pipeline spans nodes runs on a Ray cluster (`--distributed-executor-backend ray`, vLLM
  `docs/serving/parallelism_scaling.md`).
- SGLang: `python3 -m dynamo.sglang <SGLang server flags> --disaggregation-mode prefill|decode
  --disaggregation-transfer-backend B --disaggregation-bootstrap-port P` (`examples/backends/sglang/launch/
  disagg.sh`); across nodes `--nnodes --node-rank --dist-init-addr` (SGLang `server_args.py`) and DeepEP where the
  one-node plan's experts cross nodes (`decide/multinode.py`).
- TensorRT-LLM: `python3 -m dynamo.trtllm --model-path M --extra-engine-args FILE --disaggregation-mode
  prefill|decode` (`examples/backends/trtllm/launch/disagg.sh`), every engine option in FILE (TorchLlmArgs keys of
  `tensorrt_llm/llmapi/llm_args.py`), across nodes under Slurm: `srun ... --mpi=pmix trtllm-llmapi-launch python3 -m
  dynamo.trtllm ...` (Dynamo's TensorRT-LLM Slurm recipes; TensorRT-LLM `trtllm-serve.rst`, "Multi-Node with Slurm").
"""

from __future__ import annotations

import json
from dataclasses import replace

from advisor.cost.collectives import DEEPEP_BACKEND, deepep_exchange
from advisor.cost.disagg import DisaggPlan
from advisor.decide.command import ServeCommand, Serving, serve_command
from advisor.decide.disagg_place import ROUTER_PORT, TRT_BACKEND, TRT_FILES, VLLM_CONNECTOR, Worker, host
from advisor.decide.launch import Launch
from advisor.hardware.cluster import Cluster

ETCD_PORT, NATS_PORT = 2379, 4222  # Dynamo's defaults (multi-node guide)
DIST_PORT = "5000"  # SGLang --dist-init-addr port (its docs' example)
DP_RPC_PORT = "13345"  # vLLM --data-parallel-rpc-port (its docs' example)
RAY_PORT = "6379"
Env = tuple[tuple[str, str], ...]


def dynamo_command(plan: DisaggPlan, serving: Serving, workers: list[Worker], cl: Cluster) -> ServeCommand:
    """The frontend and every worker's processes (module docstring)."""
    env: Env = (("ETCD_ENDPOINTS", f"{host(cl, 0)}:{ETCD_PORT}"), ("NATS_SERVER", f"nats://{host(cl, 0)}:{NATS_PORT}"))
    launches = [Launch("router", 0, (), ("python3", "-m", "dynamo.frontend", "--http-port", str(ROUTER_PORT)), env)]
    notes: list[str] = []
    for w in workers:
        base = serve_command(replace(serving, plan=w.case.plan), plan.hw, w.case.args)
        notes += [n for n in base.notes if n not in notes]
        (one,) = base.launches
        build = {"vllm": _vllm, "sglang": _sglang}.get(plan.engine, _trtllm)
        launches += build(plan, w, list(one.argv), cl, env)
    notes += [f"Dynamo's workers register through etcd and NATS: start both on node 0 first (Dynamo's "
              f"deploy/docker-compose.yml), then the frontend and the workers; replace NODE<n>_IP with each "
              f"node's address; clients talk to the frontend on port {ROUTER_PORT}"]
    return ServeCommand(tuple(launches), tuple(notes))


def _nodes(w: Worker, cl: Cluster) -> list[int]:
    return list(range(cl.node_of(w.first), cl.node_of(w.first + w.gpus - 1) + 1))


def _local(cl: Cluster, first: int, n: int) -> tuple[int, ...]:
    return tuple(g % cl.gpus_per_node for g in range(first, first + n))


def _visible(gpus: tuple[int, ...]) -> Env:
    return (("CUDA_VISIBLE_DEVICES", ",".join(map(str, gpus))),)


def _vllm(plan: DisaggPlan, w: Worker, argv: list[str], cl: Cluster, env: Env) -> list[Launch]:
    """`dynamo.vllm` of one worker: one process, one per DP rank across nodes, or Ray across nodes (docstring)."""
    model, rest = argv[2], argv[3:]
    kv = json.dumps({"kv_connector": VLLM_CONNECTOR[plan.backend], "kv_role": "kv_both"})
    dyn = ["python3", "-m", "dynamo.vllm", "--model", model, *rest, "--disaggregation-mode", w.role,
           "--kv-transfer-config", kv]
    nodes, p = _nodes(w, cl), w.case.plan
    side = (("VLLM_NIXL_SIDE_CHANNEL_PORT", str(w.side_channel)),)
    if len(nodes) == 1:
        me = host(cl, nodes[0])
        return [Launch(w.role, nodes[0], _local(cl, w.first, w.gpus), tuple(dyn),
                       env + _visible(_local(cl, w.first, w.gpus)) + side + (("VLLM_NIXL_SIDE_CHANNEL_HOST", me),))]
    head = host(cl, nodes[0])
    if p.pp == 1 and p.dp > 1 and cl.gpus_per_node % p.tp == 0:
        out = []
        for r in range(p.dp):
            first = w.first + r * p.tp
            gpus, node = _local(cl, first, p.tp), cl.node_of(first)
            args = [*dyn, "--data-parallel-rank", str(r), "--data-parallel-address", head,
                    "--data-parallel-rpc-port", DP_RPC_PORT]
            out.append(Launch(w.role, node, gpus, tuple(args), env + _visible(gpus) + (
                ("VLLM_NIXL_SIDE_CHANNEL_PORT", str(w.side_channel + r)),
                ("VLLM_NIXL_SIDE_CHANNEL_HOST", host(cl, node)))))
        return out
    every = tuple(range(cl.gpus_per_node))
    ray = [Launch(w.role, nodes[0], every, ("ray", "start", "--head", f"--port={RAY_PORT}"))]
    ray += [Launch(w.role, n, every, ("ray", "start", f"--address={head}:{RAY_PORT}", "--block")) for n in nodes[1:]]
    return [*ray, Launch(w.role, nodes[0], every, (*dyn, "--distributed-executor-backend", "ray"),
                         env + side + (("VLLM_NIXL_SIDE_CHANNEL_HOST", head),))]


def _sglang(plan: DisaggPlan, w: Worker, argv: list[str], cl: Cluster, env: Env) -> list[Launch]:
    """`dynamo.sglang` of one worker, one process per node it spans (docstring)."""
    dyn = ["python3", "-m", "dynamo.sglang", *argv[3:], "--disaggregation-mode", w.role,
           "--disaggregation-transfer-backend", plan.backend, "--host", "0.0.0.0"]
    if w.role == "prefill":
        dyn += ["--disaggregation-bootstrap-port", str(w.bootstrap)]
    nodes, p = _nodes(w, cl), w.case.plan
    if len(nodes) == 1:
        gpus = _local(cl, w.first, w.gpus)
        return [Launch(w.role, nodes[0], gpus, tuple(dyn), env + _visible(gpus))]
    if plan.arch.moe is not None and deepep_exchange(p, cl, "sglang") and "--moe-a2a-backend" not in dyn:
        dyn += ["--moe-a2a-backend", str(DEEPEP_BACKEND["sglang"]), "--deepep-mode", "auto"]
    every = tuple(range(cl.gpus_per_node))
    return [Launch(w.role, n, every, (*dyn, "--nnodes", str(len(nodes)), "--node-rank", str(i), "--dist-init-addr",
                                      f"{host(cl, nodes[0])}:{DIST_PORT}"), env)
            for i, n in enumerate(nodes)]


def trtllm_engine_yaml(plan: DisaggPlan, w: Worker, remote_code: bool) -> str:
    """Every engine option of a TensorRT-LLM worker as TorchLlmArgs keys (`llmapi/llm_args.py`): the parallel
    sizes (`tensor_parallel_size` counts every GPU of the worker, attention DP spans them), the scheduler limits
    and KV share the prediction assumed, and its disaggregation keys (`decide/disagg_command.py: trtllm_yaml`)."""
    p, a = w.case.plan, w.case.args
    lines = [f"tensor_parallel_size: {p.tp * p.dp}", f"pipeline_parallel_size: {p.pp}"]
    if p.ep > 1:
        lines.append(f"moe_expert_parallel_size: {p.ep}")
    if p.dp > 1:
        lines.append("enable_attention_dp: true")
    lines += [f"max_batch_size: {a.max_num_seqs}", f"max_num_tokens: {a.max_num_batched_tokens}",
              f"max_seq_len: {a.max_model_len}", "kv_cache_config:",
              f"  free_gpu_memory_fraction: {a.gpu_memory_utilization:g}"]
    if a.kv_cache_dtype == "fp8":
        lines.append("  dtype: fp8")
    if remote_code:
        lines.append("trust_remote_code: true")
    if w.role == "prefill":
        lines.append("disable_overlap_scheduler: true")
    lines += ["cache_transceiver_config:", f"  backend: {TRT_BACKEND[plan.backend]}",
              f"  max_tokens_in_buffer: {plan.prefill.case.args.max_model_len}"]
    return "\n".join(lines) + "\n"


def _trtllm(plan: DisaggPlan, w: Worker, argv: list[str], cl: Cluster, env: Env) -> list[Launch]:
    """`dynamo.trtllm` of one worker; under Slurm with `trtllm-llmapi-launch` across nodes (docstring)."""
    name = TRT_FILES[w.role]
    files = ((name, trtllm_engine_yaml(plan, w, "--trust_remote_code" in argv)),)
    dyn = ("python3", "-m", "dynamo.trtllm", "--model-path", argv[1], "--extra-engine-args", name,
           "--disaggregation-mode", w.role)
    nodes = _nodes(w, cl)
    if len(nodes) == 1:
        gpus = _local(cl, w.first, w.gpus)
        return [Launch(w.role, nodes[0], gpus, dyn, env + _visible(gpus), files)]
    srun = ("srun", "-N", str(len(nodes)), "--ntasks", str(w.gpus), "--ntasks-per-node", str(cl.gpus_per_node),
            "--mpi=pmix", "trtllm-llmapi-launch")
    return [Launch(w.role, nodes[0], tuple(range(cl.gpus_per_node)), (*srun, *dyn), env, files)]
