"""(model, plan, settings) -> memory fit + features -> one vectorised evaluation -> a frozen `Sweep` whose
`.at(...)` is the `Prediction` of one case at one workload."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from advisor.arch.model import ModelArch, WeightGroup, headline_dtype
from advisor.cost.collectives import Collective, allreduce_summary, deepep_exchange
from advisor.cost.engine_args import EngineArgs, resolve
from advisor.cost.features import Features, engine_collectives, plan_features
from advisor.cost.interval import interval as interval_of
from advisor.cost.memory import MemoryFit, memory_fit, startup_lines
from advisor.cost.plan import Plan, candidate_plans, invalid_reason
from advisor.cost.prediction import (
    BREAKDOWN,
    ClusterDoc,
    CollectiveDoc,
    FitResult,
    PerGpu,
    PlanDoc,
    Prediction,
    StartupLog,
    Workload,
)
from advisor.cost.serving import RunOptions
from advisor.cost.terms import Terms
from advisor.cost.timing import predict
from advisor.cost.weights import requantize
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster
from advisor.hardware.comm import bus_factor


@dataclass(frozen=True)
class Case:
    """One model at one plan: validity, memory, and the collectives of its forward pass."""

    arch: ModelArch
    plan: Plan
    weights: tuple[WeightGroup, ...]
    invalid: str | None
    memory: MemoryFit | None
    hw: HardwareProfile
    args: EngineArgs  # the engine's configuration for this plan, every default resolved once
    source: str = ""
    cluster: Cluster | None = None  # the nodes the plan may span (None: one node, `hw`)
    # plan_features, flattened (`Features.flat`): per-case Python work done once
    _features: list[np.ndarray] = field(default_factory=list, compare=False, repr=False)

    def features(self) -> np.ndarray:
        """One row of `Features` for this case, as `Features.flat` (cached)."""
        if not self._features:
            row = plan_features(self.arch, self.plan, self.hw, self.args, self.weights, _memory(self), self.cluster)
            self._features.append(Features.flat(row))
        return self._features[0]

    @property
    def runs(self) -> bool:
        return self.invalid is None and self.memory is not None and self.memory.fits

    @property
    def reason(self) -> str | None:
        return self.invalid or (self.memory.reason if self.memory else None)

    @property
    def collectives(self) -> tuple[Collective, ...]:
        return engine_collectives(self.arch, self.plan, self.weights, self.args, self.cluster)


def a2a_reason(arch: ModelArch, settings: Settings, plan: Plan, hw: HardwareProfile,
               cluster: Cluster | None = None) -> str | None:
    """Why the asked MoE all-to-all cannot run this plan here (`hardware/a2a_backends.py: unusable`), or why
    two-batch overlap cannot (SGLang `server_args.py` refuses `--enable-two-batch-overlap` with `--moe-a2a-backend
    none`: it needs DeepEP's exchange, asked for or chosen across RDMA nodes, `collectives.deepep_exchange`); None."""
    deep = settings.moe_a2a_backend == "deepep" and plan.ep > 1 and plan.dp > 1
    if deep:
        from advisor.hardware.a2a_backends import Fabric, unusable

        if why := unusable("deepep_auto", Fabric(nvlink=hw.interconnect_class == "nvlink", crosses_nics=False)):
            return why
    if settings.two_batch_overlap and not (arch.moe is not None and
                                           (deep or deepep_exchange(plan, cluster, settings.engine))):
        return ("two-batch overlap needs DeepEP's all-to-all for the MoE exchange (SGLang refuses "
                "--enable-two-batch-overlap with --moe-a2a-backend none): attention-DP + EP with --moe-a2a deepep, "
                "or EP across RDMA nodes")
    return None


def node_gpus(hw: HardwareProfile, gpus: int | None, cluster: Cluster | None = None) -> int:
    """GPUs a plan may use: every GPU of a multi-node `cluster`, else `--gpus` of the node, or all of them."""
    if cluster is not None and cluster.multi_node:
        return cluster.gpus
    return min(gpus or hw.topology.num_gpus, hw.topology.num_gpus)


def make_case(arch: ModelArch, plan: Plan, hw: HardwareProfile, settings: Settings, gpus: int | None = None,
              source: str = "", cluster: Cluster | None = None) -> Case:
    """`gpus`: how many of the node's GPUs may be used (default all); `cluster`: the nodes a plan may span (a
    multi-node cluster of `hw`; one node when None)."""
    multi = cluster if cluster is not None and cluster.multi_node else None
    n = node_gpus(hw, gpus, multi)
    weights = requantize(arch, settings.weight_dtype, settings.engine)
    invalid = invalid_reason(arch, plan, n, weights, settings.engine, hw.gpu.sm or "", multi) \
        or a2a_reason(arch, settings, plan, hw, multi)
    args = resolve(settings, arch, plan, hw)
    # memory of a plan the engine cannot even form (vLLM/SGLang: EP other than TP x DP) is undefined: reason only;
    # TensorRT-LLM forms moe_tp x moe_ep = TP x DP (`Plan.moe_tp`)
    formable = plan.ep in (1, plan.tp * plan.dp) or (settings.engine == "trtllm" and invalid is None)
    # on a cluster a plan that cannot be placed or formed says why, without its memory (hundreds of candidates)
    formable = formable and (multi is None or invalid is None)
    mem = memory_fit(arch, plan, hw, args, weights) if plan.gpus <= n and formable else None
    case = Case(arch=arch, plan=plan, weights=weights, invalid=invalid, memory=mem, hw=hw, args=args, source=source,
                cluster=multi)
    if case.runs:
        case.features()
    return case


def all_cases(arch: ModelArch, hw: HardwareProfile, settings: Settings, gpus: int | None = None,
              source: str = "", cluster: Cluster | None = None) -> list[Case]:
    """Every candidate plan of `arch` on the node (or on `cluster` when it has several nodes)."""
    multi = cluster if cluster is not None and cluster.multi_node else None
    return [make_case(arch, p, hw, settings, gpus, source, multi)
            for p in candidate_plans(arch, node_gpus(hw, gpus, multi), multi)]


def fit_result(case: Case, hw: HardwareProfile) -> FitResult:
    """The `advisor fit` object of one case."""
    return FitResult(**_fit_fields(case, hw))


def _fit_fields(case: Case, hw: HardwareProfile) -> dict[str, Any]:
    mem = case.memory
    per_gpu = log = None
    if mem is not None:
        b = mem.budget
        per_gpu = PerGpu(weights_bytes=round(mem.weights_bytes), kv_cache_bytes=round(max(mem.kv_cache_bytes, 0)),
                         activation_bytes=round(mem.activation_bytes), overhead_bytes=round(mem.overhead_bytes),
                         capacity_bytes=round(mem.capacity_bytes), budget_bytes=round(mem.budget_bytes),
                         sampler_bytes=round(b.sampler), forward_bytes=round(b.forward),
                         persistent_bytes=round(b.persistent), non_torch_bytes=round(b.non_torch),
                         cudagraph_bytes=round(b.cudagraph), pre_snapshot_bytes=round(b.pre_snapshot))
        log = StartupLog(engine=mem.engine, engine_version=mem.engine_version,
                         model_loading_gib=round(mem.weights_bytes / 2**30, 2),
                         available_kv_cache_gib=round(mem.available_kv_bytes / 2**30, 2),
                         gpu_kv_cache_tokens=mem.gpu_kv_cache_tokens, max_concurrency=round(mem.concurrency, 2),
                         tokens_per_request=mem.max_model_len, block_size=mem.block_size, num_blocks=mem.num_blocks,
                         lines=startup_lines(mem))
    return {"model": case.arch.model, "source": case.source, "hardware": hw.id, "plan": PlanDoc.of(case.plan),
            "fits": case.runs, "reason": case.reason, "per_gpu": per_gpu,
            "kv_cache_tokens": mem.kv_cache_tokens if mem and case.runs else 0,
            "max_concurrency": mem.max_concurrency if mem and case.runs else 0,
            "max_model_len": mem.max_model_len if mem else None, "kv_cache_dtype": mem.kv_dtype if mem else None,
            "kv_bytes_per_token_per_gpu": mem.kv_bytes_per_token if mem else None,
            "weight_dtype": headline_dtype(case.weights), "startup_log": log, "engine_args": case.args,
            "cluster": cluster_doc(case)}


def cluster_doc(case: Case) -> ClusterDoc | None:
    """The nodes the case's plan spans (None on one node)."""
    c = case.cluster
    if c is None:
        return None
    return ClusterDoc(nodes=c.nodes, gpus_per_node=c.gpus_per_node, gpus=c.gpus, fast_domain_gpus=c.fast_domain_gpus,
                      fabric=c.fabric.id if c.fabric else None, fabric_name=c.fabric.name if c.fabric else None,
                      plan_nodes=c.nodes_for(case.plan.gpus), replicas=max(c.gpus // case.plan.gpus, 1))


def link_of(cluster: Cluster | None, domains: int) -> str | None:
    """The link a group spanning `domains` fast domains is as slow as: the fabric between them, else the fast
    domain's own (None on one node)."""
    if cluster is None:
        return None
    if domains > 1 and cluster.fabric is not None:
        return cluster.fabric.name
    return cluster.fast_link + (" (NVL72 rack)" if cluster.rack_nodes > 1 and cluster.nodes > 1 else "")


def not_running(case: Case, hw: HardwareProfile, workload: Workload, calibrated: dict[str, Any]) -> Prediction:
    """`predict` of a plan that cannot run: the fit fields with the reason; no speed."""
    return Prediction(**_fit_fields(case, hw), workload=workload, calibrated=calibrated)


def collective_docs(collectives: tuple[Collective, ...], cluster: Cluster | None = None) -> list[CollectiveDoc]:
    per = {"tokens": "token", "dp_tokens": "dp_token", "sampled": "sampled row", "fixed": "fixed"}
    return [CollectiveDoc(cause=c.cause, op=c.op, group=c.group, calls=c.calls, bytes_per_unit=c.bytes_per_unit,
                          per=per[c.slot.scales_with], link=link_of(cluster, c.domains)) for c in collectives]


# the engine flag that caps the running batch (`EngineArgs.max_num_seqs`)
SEQ_LIMIT = {"vllm": "vLLM's max_num_seqs", "sglang": "SGLang's max_running_requests",
             "trtllm": "TensorRT-LLM's max_batch_size"}


@dataclass(frozen=True)
class Sweep:
    """Runnable cases x concurrency [C] x paired lengths [L], evaluated once; arrays [P, C, L] are read-only."""

    cases: tuple[Case, ...]
    hw: HardwareProfile
    concurrency: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    out: dict[str, np.ndarray]
    calibrated: dict[str, Any]

    def series(self, name: str, i: int, k: int = 0) -> np.ndarray:
        """One result over the concurrency grid for case i at length index k."""
        return self.out[name][i, :, k]

    def column(self, concurrency: int) -> int:
        hits = np.flatnonzero(self.concurrency == concurrency)
        if not hits.size:
            raise KeyError(f"concurrency {concurrency} is not in the sweep's grid")
        return int(hits[0])

    def at(self, i: int, concurrency: int, k: int = 0) -> Prediction:
        """The prediction of case i at `concurrency` (a grid value) and length index k."""
        case, c = self.cases[i], self.column(concurrency)
        o = self.out
        breakdown = {name: float(o[f"step_{name}"][i, c, k]) * 1e3 for name in BREAKDOWN}
        mechanism = {key[10:]: float(v[i, c, k]) * 1e3 for key, v in o.items() if key.startswith("step_mech_")}
        tpot = float(o["tpot_s"][i, c, k]) * 1e3
        interval = interval_of(self.calibrated, ttft_ms=float(o["ttft_s"][i, c, k]) * 1e3, tpot_ms=tpot,
                               output_tok_s=float(o["output_tok_s"][i, c, k]), running=int(o["running"][i, c, k]),
                               output_len=int(self.output_len[k]))
        colls = case.collectives
        ar = allreduce_summary(colls)
        group = int(ar["group"])
        return Prediction(
            **_fit_fields(case, self.hw), calibrated=self.calibrated,
            workload=Workload(concurrency=concurrency, input_len=int(self.input_len[k]),
                              output_len=int(self.output_len[k])),
            ttft_ms=float(o["ttft_s"][i, c, k]) * 1e3, tpot_ms=tpot,
            per_user_tok_s=float(o["per_user_tok_s"][i, c, k]), output_tok_s=float(o["output_tok_s"][i, c, k]),
            running_sequences=int(o["running"][i, c, k]),
            **self._queueing(i, concurrency, int(o["running"][i, c, k]), k),
            allreduces_per_step=int(ar["calls"]),
            collectives_per_step=sum(x.calls for x in colls if x.group > 1),
            allreduce_bytes_per_token=ar["payload_bytes_per_token"],
            wire_bytes_per_token=ar["payload_bytes_per_token"] * bus_factor("allreduce", group) if group > 1
            else 0.0,
            comm_ms_per_step=breakdown["comm"], breakdown_ms=breakdown, mechanism_ms=mechanism,
            prefill_interference_ms=float(o["prefill_interference_s"][i, c, k]) * 1e3,
            bottleneck=max(breakdown, key=lambda n: breakdown[n]), interval=interval,
            collectives=collective_docs(colls, case.cluster), **self._speculation(case))

    def _speculation(self, case: Case) -> dict[str, Any]:
        """The MTP drafts a step of this case verifies, the tokens a sequence gains per step (its acceptance length)
        and where the acceptance comes from (`cost/speculative.py`); nothing when speculation is off."""
        feats = Features.from_flat(case.features()[None, :])
        if not feats.spec_k[0]:
            return {}
        from advisor.cost.speculative import acceptance_for

        return {"spec_tokens": int(feats.spec_k[0]), "tokens_per_step": float(feats.spec_tokens[0]),
                "spec_acceptance_source": acceptance_for(case.arch.model, case.args.spec_acceptance)[1]}


    def _queueing(self, i: int, users: int, running: int, k: int) -> dict[str, Any]:
        """Users beyond what the engine runs at once wait for a slot (closed loop, `timing.serve`): how many,
        what limits the running batch, and that TTFT includes the wait."""
        queued = max(users - running, 0)
        if not queued:
            return {"queued_requests": 0, "queueing": None}
        dp = self.cases[i].plan.dp
        per_rank = -(-running // dp)
        seq = int(self.input_len[k] + self.output_len[k] / 2)  # paged: prompt + half the output on average
        seqs = self.cases[i].args.max_num_seqs
        limit = (f"{SEQ_LIMIT[self.cases[i].args.engine]} {seqs} per DP rank" if per_rank >= seqs
                 else f"KV cache room for {per_rank:,} sequences of {seq:,} tokens on average (prompt + output so "
                      "far, paged) per DP rank")
        return {"queued_requests": queued,
                "queueing": f"{running:,} of {users:,} users run at once ({limit}); {queued:,} wait in the queue, "
                            "so TTFT includes the wait and tok/s per user counts decoding only"}


def evaluate(cases: list[Case], terms: Terms, concurrency: np.ndarray, input_len: np.ndarray,
             output_len: np.ndarray, calibrated: dict[str, Any] | None = None) -> Sweep:
    """One vectorised evaluation of runnable `cases` (one hardware profile and engine) x `concurrency` x paired
    (input_len, output_len), each case under its own resolved engine arguments (`Case.args`). Cases with the same
    features (one architecture under two names, at the same plan) are evaluated once: every formula is per case."""
    hw, engine, cluster = cases[0].hw, cases[0].args.engine, cases[0].cluster
    rows_of_cases = []
    for c in cases:  # one pass over the cases: their features, and that they share the sweep's node and engine
        if c.hw is not hw or c.args.engine != engine or (c.cluster is not cluster and c.cluster != cluster):
            raise ValueError("one hardware profile (and cluster) and engine per sweep")
        rows_of_cases.append(c.features())
    flat = np.concatenate(rows_of_cases).reshape(len(cases), -1)  # one row per case
    rows: dict[object, int] = {}  # a row's bytes -> the first case with them
    first = [rows.setdefault(row, i) for i, row in enumerate(flat.view(np.dtype((np.void, flat[0].nbytes))).ravel()
                                                             .tolist())]
    distinct = sorted(rows.values())
    grid = Features.from_flat(flat[distinct]).grid()
    of_case = np.searchsorted(distinct, first)  # each case's row of `grid`
    conc = np.asarray(concurrency, float)
    inp, outp = np.asarray(input_len, float), np.asarray(output_len, float)
    out = predict(grid, hw, terms, engine, conc[None, :, None], inp[None, None, :],
                  outp[None, None, :], options=RunOptions(scheduled_ahead=grid.sched_ahead), cluster=cluster)
    shape = (len(distinct), len(conc), len(inp))
    frozen = {k: _frozen(np.take(np.broadcast_to(np.asarray(v, dtype=float), shape), of_case, axis=0))
              for k, v in out.items()}
    return Sweep(cases=tuple(cases), hw=hw, concurrency=_readonly(conc), input_len=_readonly(inp),
                 output_len=_readonly(outp), out=frozen, calibrated=calibrated or {"how": "none", "rows": 0})


def _memory(case: Case) -> MemoryFit:
    if case.memory is None or not case.runs:
        raise ValueError(f"{case.arch.model} {case.plan.label()} does not run: {case.reason}")
    return case.memory


def _readonly(a: np.ndarray) -> np.ndarray:
    b = np.array(np.broadcast_to(a, np.shape(a)), dtype=float)
    b.setflags(write=False)
    return b


def _frozen(a: np.ndarray) -> np.ndarray:
    """`a`, a new array (no other holds it), made read-only in place."""
    a.setflags(write=False)
    return a
