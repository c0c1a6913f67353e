"""What a prediction says, as the JSON of `advisor fit` and `advisor predict` (`--json`): pydantic models
built by `Sweep.at` and `fit_result`, formatted by `advisor/report`, never recomputed there."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from advisor.cost.engine_args import EngineArgs
from advisor.cost.plan import Plan

BREAKDOWN = ("weights", "kv", "compute", "comm", "overhead")


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Quiet(_Doc):
    """A document whose cluster-only fields (`QUIET`) are left out of its JSON while they are None: a one-node answer
    reads as it did before clusters existed."""

    QUIET: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _leave_out_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in self.QUIET:
            if data.get(key, 0) is None:
                del data[key]
        return data


class ClusterDoc(_Doc):
    """The nodes a plan spans (`hardware/cluster.py`): how many, the fabric between them, the fast domain."""

    nodes: int  # nodes of the cluster
    gpus_per_node: int
    gpus: int
    fast_domain_gpus: int  # GPUs one collective reaches without a NIC (a node, or an NVL72 rack)
    fabric: str | None  # the scale-out fabric's id (None: the nodes share one NVLink domain)
    fabric_name: str | None
    plan_nodes: int  # nodes the plan occupies
    replicas: int  # copies of the plan the cluster holds side by side


class PlanDoc(_Doc):
    tp: int
    pp: int
    dp: int
    ep: int
    label: str
    gpus: int

    @staticmethod
    def of(plan: Plan) -> PlanDoc:
        return PlanDoc(tp=plan.tp, pp=plan.pp, dp=plan.dp, ep=plan.ep, label=plan.label(), gpus=plan.gpus)


class PerGpu(_Doc):
    """Memory of one GPU (bytes): weights + KV room + activations + overhead = budget <= capacity, where
    overhead = non-torch + CUDA-graph estimate and activations = the start-up profile's peak (the larger of the
    forward and the sampler warm-up, plus kept workspaces); `cost/budget.py` has each term's formula."""

    weights_bytes: int
    kv_cache_bytes: int
    activation_bytes: int
    overhead_bytes: int
    capacity_bytes: int
    budget_bytes: int
    sampler_bytes: int
    forward_bytes: int
    persistent_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    pre_snapshot_bytes: int  # CUDA context + NCCL init, outside vLLM's budget


class StartupLog(_Doc):
    """The start-up log's memory lines for one GPU, as the engine prints them (vLLM `gpu_model_runner.py`
    "Model loading took", `gpu_worker.py` "Available KV cache memory", `kv_cache_utils.py` "GPU KV cache size"
    and "Maximum concurrency"); `lines` is the text."""

    engine: str
    engine_version: str
    model_loading_gib: float
    available_kv_cache_gib: float
    gpu_kv_cache_tokens: int
    max_concurrency: float
    tokens_per_request: int
    block_size: int
    num_blocks: int
    lines: list[str]


class Workload(_Doc):
    concurrency: int
    input_len: int
    output_len: int


class CollectiveDoc(_Quiet):
    QUIET: ClassVar[tuple[str, ...]] = ("link",)

    cause: str
    op: str
    group: int
    calls: int
    bytes_per_unit: float
    per: str  # what one unit of the message is: token, dp_token (every DP rank's), sampled row, or fixed
    link: str | None = None  # on a cluster: the link the group's slowest hop crosses (a node's NVLink, the fabric)


class FitResult(_Quiet):
    """`advisor fit`: can the plan run, and how is each GPU's memory spent."""

    QUIET: ClassVar[tuple[str, ...]] = ("cluster",)

    model: str
    source: str
    hardware: str
    plan: PlanDoc
    fits: bool
    reason: str | None
    per_gpu: PerGpu | None
    kv_cache_tokens: int
    max_concurrency: int
    max_model_len: int | None
    kv_cache_dtype: str | None
    kv_bytes_per_token_per_gpu: float | None
    weight_dtype: str
    startup_log: StartupLog | None = None
    # the engine's configuration the memory, the timing and the printed command all assumed (`cost/engine_args.py`)
    engine_args: EngineArgs | None = None
    cluster: ClusterDoc | None = None  # with --nodes: the nodes the plan spans (left out of the JSON on one node)


class Prediction(FitResult):
    """`advisor predict`: speed at one workload (the speed fields are null when the plan does not run)."""

    QUIET: ClassVar[tuple[str, ...]] = ("cluster", "scale_out")

    workload: Workload
    calibrated: dict[str, Any]
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    per_user_tok_s: float | None = None
    output_tok_s: float | None = None
    running_sequences: int | None = None  # requests decoding at once (all DP ranks)
    queued_requests: int | None = None  # users waiting for a slot: workload.concurrency - running_sequences
    queueing: str | None = None  # why requests queue (KV room or max_num_seqs) and what it does to TTFT; None if not
    allreduces_per_step: int | None = None
    collectives_per_step: int | None = None
    allreduce_bytes_per_token: float | None = None
    wire_bytes_per_token: float | None = None
    comm_ms_per_step: float | None = None
    breakdown_ms: dict[str, float] | None = None
    # the decode step by mechanism (ms): dense GEMMs, MoE kernel chain, attention, collectives, fixed time
    mechanism_ms: dict[str, float] = {}
    prefill_interference_ms: float | None = None
    bottleneck: str | None = None
    interval: dict[str, float] | None = None
    collectives: list[CollectiveDoc] = []
    # MTP speculation the prediction assumed (0: none), tokens a sequence gains per step, and the acceptance's source
    spec_tokens: int = 0
    tokens_per_step: float = 1.0
    spec_acceptance_source: str | None = None
    # with --nodes: whether the extra nodes help this model, at one user and at load (`decide/nodes.py: scale_out`)
    scale_out: str | None = None
