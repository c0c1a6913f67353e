"""The commands of a disaggregated deployment: one `Launch` per worker process (role "prefill" or "decode") and one
for the router (role "router"), every argument shell-quoted (`decide/launch.py`).

Each worker starts from the engine's own one-node command for its plan (`decide/command.py: serve_command`: every
flag that shaped the prediction), placed on its GPUs (units side by side, prefill workers first, as
`cost/disagg_transfer.py: pool_link` places them), plus the engine's disaggregation flags:

- vLLM: `--kv-transfer-config '{"kv_connector": "NixlConnector", "kv_role": "kv_producer"}'` (decode: kv_consumer;
  MooncakeConnector, P2pNcclConnector by the backend), a `--port` per worker and, for NIXL, a handshake port per
  worker unique on its host, `VLLM_NIXL_SIDE_CHANNEL_PORT` (each DP rank takes base + its rank), and
  `VLLM_NIXL_SIDE_CHANNEL_HOST` across hosts (vLLM `docs/features/nixl_connector_usage.md`); Mooncake's bootstrap
  port `VLLM_MOONCAKE_BOOTSTRAP_PORT` on each prefill worker (`docs/features/mooncake_connector_usage.md`). The
  router is vLLM's `vllm-router --vllm-pd-disaggregation --prefill URL [BOOTSTRAP_PORT] --decode URL`, with
  `--kv-connector mooncake` for Mooncake (vllm-project/router `docs/model-routing/pd-disaggregation.md`,
  `py_src/vllm_router/router_args.py`). P2pNcclConnector pairs with its own ZMQ proxy: no router line is printed.
- SGLang: `--disaggregation-mode prefill|decode`, `--disaggregation-transfer-backend mooncake|nixl` and a
  `--disaggregation-bootstrap-port` per prefill worker (default 8998, `python/sglang/srt/server_args.py`); the
  router `python -m sglang_router.launch_router --pd-disaggregation --prefill URL BOOTSTRAP_PORT --decode URL`
  (`docs/advanced_features/pd_disaggregation.md`).
- TensorRT-LLM: each worker's `--extra_llm_api_options` YAML gains `cache_transceiver_config` (`backend`,
  `max_tokens_in_buffer` at least the longest prompt: the context length) and, on context workers,
  `disable_overlap_scheduler: true` ("not supported for disaggregated context servers yet"); the router is
  `trtllm-serve disaggregated -c disagg_config.yaml` listing `context_servers` and `generation_servers`
  (`docs/source/features/disagg-serving.md`, trtllm-serve).

Across nodes Dynamo is the natural launcher (every measured rack-scale deployment of
`tests/data/bench/silicon_disagg_dev.csv` ran under it): `decide/disagg_dynamo.py`.
"""

from __future__ import annotations

import json
from dataclasses import replace

from advisor.cost.disagg import DisaggPlan
from advisor.decide.command import ServeCommand, Serving, serve_command
from advisor.decide.disagg_dynamo import dynamo_command
from advisor.decide.disagg_place import (
    DISAGG_CONFIG,
    ROUTER_PORT,
    TRT_BACKEND,
    TRT_FILES,
    VLLM_CONNECTOR,
    Worker,
    host,
    place,
)
from advisor.decide.launch import Launch
from advisor.hardware.cluster import Cluster


def disagg_command(plan: DisaggPlan, serving: Serving, replicas: int = 1, cluster: Cluster | None = None,
                   gpu_ids: list[int] | None = None) -> ServeCommand:
    """The launches of `replicas` copies of `plan` behind one router (`serving`: the model and its checkpoint facts;
    `gpu_ids`: the node's GPUs the deployment uses, by --gpus; default 0, 1, ...). On several nodes: Dynamo."""
    cl = cluster or Cluster(plan.hw)
    workers = place(plan, replicas)
    if cl.multi_node:
        return dynamo_command(plan, serving, workers, cl)
    ids = gpu_ids or list(range(cl.gpus_per_node))
    launches, notes = [], []
    for w in workers:
        base = serve_command(replace(serving, plan=w.case.plan), plan.hw, w.case.args)
        notes += [n for n in base.notes if n not in notes]
        (one,) = base.launches
        gpus = tuple(ids[w.first:w.first + w.gpus])
        env = (("CUDA_VISIBLE_DEVICES", ",".join(map(str, gpus))),)
        argv, more_env, files = worker_flags(plan, w, list(one.argv), one.files)
        launches.append(Launch(w.role, 0, gpus, tuple(argv), env + more_env, files))
    router, why = router_launch(plan, workers, cl)
    if router is not None:
        launches.append(router)
    notes += [why] if why else []
    notes.append(f"start the {len(workers)} workers first (each in its own shell, or with `&`), then the router; "
                 f"clients talk to the router on port {ROUTER_PORT}")
    return ServeCommand(tuple(launches), tuple(notes))


def worker_flags(plan: DisaggPlan, w: Worker, argv: list[str], files: tuple[tuple[str, str], ...]
                 ) -> tuple[list[str], tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """The engine's one-node argv of a worker with its disaggregation flags, the environment they need, and the
    files the line writes (module docstring); every worker on one host."""
    engine, role = plan.engine, w.role
    if engine == "vllm":
        kv = {"kv_connector": VLLM_CONNECTOR[plan.backend],
              "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"}
        env: tuple[tuple[str, str], ...] = ()
        if plan.backend == "nixl":
            env = (("VLLM_NIXL_SIDE_CHANNEL_PORT", str(w.side_channel)),)
        elif plan.backend == "mooncake" and role == "prefill":
            env = (("VLLM_MOONCAKE_BOOTSTRAP_PORT", str(w.bootstrap)),)
        return [*argv, "--port", str(w.port), "--kv-transfer-config", json.dumps(kv)], env, files
    if engine == "sglang":
        more = ["--disaggregation-mode", role, "--disaggregation-transfer-backend", plan.backend,
                "--port", str(w.port)]
        if role == "prefill":
            more += ["--disaggregation-bootstrap-port", str(w.bootstrap)]
        return [*argv, *more], (), files
    return trtllm_worker(plan, w, argv, files)


def trtllm_yaml(plan: DisaggPlan, role: str, files: tuple[tuple[str, str], ...]) -> str:
    """A TensorRT-LLM worker's options YAML: the one-node command's own lines (`serve_command`), then
    `cache_transceiver_config` and, on a context worker, the overlap scheduler off (module docstring)."""
    lines = [ln for _, text in files for ln in text.splitlines()]
    if role == "prefill":
        lines.append("disable_overlap_scheduler: true")
    lines += ["cache_transceiver_config:", f"  backend: {TRT_BACKEND[plan.backend]}",
              f"  max_tokens_in_buffer: {plan.prefill.case.args.max_model_len}"]
    return "\n".join(lines) + "\n"


def trtllm_worker(plan: DisaggPlan, w: Worker, argv: list[str], files: tuple[tuple[str, str], ...]
                  ) -> tuple[list[str], tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """`trtllm-serve` of one context or generation server: its own options file and port."""
    name = TRT_FILES[w.role]
    if "--extra_llm_api_options" in argv:
        k = argv.index("--extra_llm_api_options")
        argv = [*argv[:k], *argv[k + 2:]]
    argv += ["--extra_llm_api_options", name, "--port", str(w.port)]
    return argv, (), ((name, trtllm_yaml(plan, w.role, files)),)


def router_launch(plan: DisaggPlan, workers: list[Worker], cl: Cluster) -> tuple[Launch | None, str | None]:
    """The engine's PD router in front of every worker (module docstring), or None with why."""
    pre = [w for w in workers if w.role == "prefill"]
    dec = [w for w in workers if w.role == "decode"]

    def url(w: Worker) -> str:
        return f"http://{host(cl, cl.node_of(w.first))}:{w.port}"

    if plan.engine == "vllm":
        if plan.backend == "p2pnccl":
            return None, ("P2pNcclConnector pairs with its own ZMQ proxy (vLLM examples/online_serving/"
                          "disaggregated_serving_p2p_nccl_xpyd): no router is printed; NIXL is the default")
        argv = ["vllm-router", "--vllm-pd-disaggregation"]
        if plan.backend == "mooncake":
            argv += ["--kv-connector", "mooncake"]
        for w in pre:
            argv += ["--prefill", url(w), *([str(w.bootstrap)] if plan.backend == "mooncake" else [])]
        for w in dec:
            argv += ["--decode", url(w)]
        argv += ["--host", "0.0.0.0", "--port", str(ROUTER_PORT)]
        return Launch("router", 0, (), tuple(argv)), None
    if plan.engine == "sglang":
        argv = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation"]
        for w in pre:
            argv += ["--prefill", url(w), str(w.bootstrap)]
        for w in dec:
            argv += ["--decode", url(w)]
        argv += ["--host", "0.0.0.0", "--port", str(ROUTER_PORT)]
        return Launch("router", 0, (), tuple(argv)), None
    cfg = ["hostname: 0.0.0.0", f"port: {ROUTER_PORT}", "backend: pytorch"]
    for key, ws in (("context_servers", pre), ("generation_servers", dec)):
        cfg += [f"{key}:", f"  num_instances: {len(ws)}", "  urls:"]
        cfg += [f'    - "{url(w).removeprefix("http://")}"' for w in ws]
    return Launch("router", 0, (), ("trtllm-serve", "disaggregated", "-c", DISAGG_CONFIG), (),
                  ((DISAGG_CONFIG, "\n".join(cfg) + "\n"),)), None
