"""The commands of a deployment of several replicas of one plan on one node (`decide/replicas.py`): one command where
the engine runs replicas itself, else one server per replica on its own GPUs and port with a router in front.

- vLLM, a dense model at PP 1 (no attention DP): `vllm serve ... --tensor-parallel-size T --data-parallel-size N`.
  Each DP rank is its own engine ("core engine" process, with T GPU workers) behind one API server, and the ranks
  of a dense model are independent: only MoE ranks step together and share the experts
  (`docs/serving/data_parallel_deployment.md`); `--max-num-seqs` and `--max-num-batched-tokens` hold per rank
  (`vllm/engine/arg_utils.py: EngineArgs`). Rank k takes the k-th T visible GPUs.
- SGLang at PP 1 (no attention DP): `python -m sglang.launch_server --tp-size T --dp-size N` without
  `--enable-dp-attention`. Its data-parallel controller starts N tensor-parallel groups of T GPUs, each at the
  previous one's base GPU + T (`python/sglang/srt/managers/data_parallel_controller.py: DataParallelController.
  launch_dp_schedulers`), and spreads requests over them; without DP attention the per-worker request and chunk
  limits are not divided (`server_args.py: _handle_data_parallelism`, `mem_cache/kv_cache_configurator.py:
  resolve_max_num_reqs` divides by the attention-DP size only).
- Otherwise (TensorRT-LLM; a MoE model on vLLM, whose DP ranks would step together; PP > 1): one server per
  replica, `CUDA_VISIBLE_DEVICES` its GPUs and `--port` its own (vLLM `vllm serve --port`, SGLang `--port`,
  `trtllm-serve --port`), and SGLang's Model Gateway in front, which routes to any OpenAI-compatible server
  (`docs/advanced_features/sgl_model_gateway.md`): `python -m sglang_router.launch_router --worker-urls URL...
  --policy round_robin --port P` (`sgl-model-gateway/bindings/python/src/sglang_router/router_args.py: RouterArgs`).
  Round robin spreads the users evenly, as the prediction assumes.

GPUs: each replica takes the GPUs an operator would pick among those left (`hardware/placement.py: pick_gpus`'s
order: one NVLink domain, else one PCIe switch, else one socket, else whole sockets), so every replica sits like
the first, which the prediction priced.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.decide.launch import Launch
from advisor.hardware import HardwareProfile
from advisor.hardware.placement import pick_gpus
from advisor.hardware.schema import Topology

ROUTER_PORT = 8000  # the deployment's one endpoint
FIRST_REPLICA_PORT = 8001  # replica k listens on FIRST_REPLICA_PORT + k
Files = tuple[tuple[str, str], ...]


def _switch_order(topo: Topology, gpus: Sequence[int]) -> list[int]:
    """GPUs ordered so that those sharing a PCIe switch (or NVLink domain) are adjacent, big groups first (as
    `hardware/placement.py` orders them)."""
    groups: dict[int, list[int]] = {}
    member = {g: i for i, grp in enumerate(topo.nvlink_domains or topo.pcie_switches) for g in grp}
    for g in gpus:
        groups.setdefault(member.get(g, -1 - g), []).append(g)
    ordered = sorted(groups.values(), key=lambda grp: (-len(grp), grp[0]))
    return [g for grp in ordered for g in sorted(grp)]


def _pick(topo: Topology, pool: Sequence[int], n: int) -> list[int]:
    """n GPUs of `pool` by `pick_gpus`'s rule (on the whole node it is `pick_gpus`)."""
    for level in (topo.nvlink_domains, topo.pcie_switches, topo.sockets):
        groups = [[g for g in grp if g in pool] for grp in level]
        fits = sorted((grp for grp in groups if len(grp) >= n), key=lambda grp: (len(grp), min(grp)))
        if fits:
            return sorted(_switch_order(topo, fits[0])[:n])
    chosen: list[int] = []
    for sock in sorted(([g for g in s if g in pool] for s in topo.sockets), key=lambda s: (-len(s), min(s, default=0))):
        chosen += _switch_order(topo, sock)[: n - len(chosen)]
    chosen += [g for g in pool if g not in chosen][: n - len(chosen)]
    return sorted(chosen[:n])


def replica_gpus(hw: HardwareProfile, plan_gpus: int, replicas: int, budget: int) -> list[tuple[int, ...]]:
    """Each replica's GPUs: disjoint groups of `plan_gpus` among the `budget` GPUs an operator would use (each the
    best fit among the GPUs left), in GPU order."""
    n = hw.topology.num_gpus
    pool = list(range(n)) if budget >= n else pick_gpus(hw, budget)
    out: list[tuple[int, ...]] = []
    for _ in range(replicas):
        group = _pick(hw.topology, pool, plan_gpus)
        out.append(tuple(group))
        pool = [g for g in pool if g not in group]
    return sorted(out)


def _visible(gpus: Sequence[int], hw: HardwareProfile) -> tuple[tuple[str, str], ...]:
    if list(gpus) == list(range(hw.topology.num_gpus)):
        return ()
    return (("CUDA_VISIBLE_DEVICES", ",".join(str(g) for g in gpus)),)


def _after(argv: list[str], flag: str, extra: list[str]) -> list[str]:
    """`argv` with `extra` right after `flag` and its value."""
    i = argv.index(flag) + 2
    return [*argv[:i], *extra, *argv[i:]]


def in_one_server(engine: str, moe: bool, pp: int, dp: int) -> bool:
    """Whether the engine runs the replicas itself from one command (see the module docstring)."""
    if pp > 1 or dp > 1:
        return False
    return engine == "sglang" or (engine == "vllm" and not moe)


def replica_launches(engine: str, moe: bool, pp: int, dp: int, argv: list[str], files: Files,
                     groups: list[tuple[int, ...]], hw: HardwareProfile) -> tuple[tuple[Launch, ...], list[str]]:
    """The launches of len(groups) replicas of the one-replica command `argv` (its GPU environment left out; its
    third argument the model, or SGLang's fifth), and notes."""
    n = len(groups)
    if in_one_server(engine, moe, pp, dp):
        every = [g for grp in groups for g in grp]
        flag, extra = (("--tp-size", ["--dp-size", str(n)]) if engine == "sglang"
                       else ("--tensor-parallel-size", ["--data-parallel-size", str(n)]))
        return (Launch("server", 0, tuple(every), tuple(_after(argv, flag, extra)), _visible(every, hw), files),), []
    ports = [FIRST_REPLICA_PORT + k for k in range(n)]
    model = {"sglang": 5, "vllm": 3}.get(engine, 2)  # right after `--model-path M`, `vllm serve M`, `trtllm-serve M`
    launches = [Launch("replica", 0, grp, (*argv[:model], "--port", str(port), *argv[model:]), _visible(grp, hw),
                       files) for grp, port in zip(groups, ports, strict=True)]
    router = ("python", "-m", "sglang_router.launch_router", "--worker-urls",
              *(f"http://127.0.0.1:{port}" for port in ports), "--policy", "round_robin", "--port", str(ROUTER_PORT))
    launches.append(Launch("router", 0, (), router))
    note = (f"{n} servers, one per replica (ports {ports[0]}-{ports[-1]}), started in the background, then the "
            f"router on port {ROUTER_PORT} (pip install sglang-router), which spreads the users over them round "
            "robin as the prediction assumes; any HTTP load balancer over those ports does the same")
    return tuple(launches), [note]
