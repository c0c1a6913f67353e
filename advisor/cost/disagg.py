"""A disaggregated deployment as a plan: x prefill workers with their plan and y decode workers with theirs, the KV
transfer backend the engine uses between them, and the link that joins the pools (`cost/disagg_transfer.py`).
Each side is an ordinary `Case` (`cost/sweep.py: make_case`: validity, memory fit under its own resolved engine
arguments); the serving dynamics are `cost/disagg_serving.py`.

What each engine allows between the two sides:
- vLLM (`--kv-transfer-config`, `kv_connector` NixlConnector, MooncakeConnector or P2pNcclConnector): the decode
  worker pulls the KV once the prefill request has finished (NixlConnector: the decode scheduler holds the request
  in WAITING_FOR_REMOTE_KVS and reads every block, `distributed/kv_transfer/kv_connector/v1/nixl/scheduler.py:
  get_num_new_matched_tokens`). Different TP on the two sides: yes, KV heads sliced, MLA latent read whole ("Hetero
  TP", `docs/features/nixl_connector_compatibility.md`), except hybrid SSM/Mamba models, which need P TP == D TP
  (footnote 5 there); the KV cache dtype must match (the handshake's compatibility hash, same page).
- SGLang (`--disaggregation-mode prefill|decode`, `--disaggregation-transfer-backend mooncake|nixl`, mooncake the
  default, `srt/server_args.py`): the decode side pre-allocates the request's KV before the prefill runs
  (`disaggregation/decode.py: DecodePreallocQueue`), the prefill side sends each finished chunk as the next one
  computes (`disaggregation/prefill.py: send_kv_chunk`), M-to-N TP by head slices (`mooncake/conn.py:
  send_kvcache_slice`), MLA whole; the first token comes from the prefill and the decode emits it without a forward
  (`decode.py: get_new_prebuilt_batch`, "a schedulebatch for fake completed prefill").
- TensorRT-LLM (`cache_transceiver_config.backend` DEFAULT (UCX), UCX, NIXL, MPI, `llmapi/llm_args.py:
  CacheTransceiverConfig`): the context phase completes, then its KV is sent; the transfer overlaps other requests'
  compute, not the request's own (`docs/source/features/disagg-serving.md`, "Overlap Optimization"); context and
  generation may differ in TP and PP ("their parallelism can be heterogeneous, i.e., TP,PP can be different"), every
  layer's KV must be homogeneous in dtype and heads (its FAQ); `trtllm-serve disaggregated` streams the generation
  server's output (`serve/openai_disagg_server.py: _merge_streaming_responses`), so the first token reaches the
  client after the generation server's first step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from advisor.arch.model import ModelArch
from advisor.cost.disagg_transfer import KvBytes, KvLink, PoolLink, kv_bytes, pool_link
from advisor.cost.memory import kv_elem_bytes
from advisor.cost.plan import Plan
from advisor.cost.sweep import Case, make_case
from advisor.cost.workload import Settings
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile
from advisor.hardware.cluster import Cluster

Role = Literal["prefill", "decode"]
# KV transfer backends each engine offers between NVIDIA GPUs, its default first (module docstring)
BACKENDS: dict[str, tuple[str, ...]] = {"vllm": ("nixl", "mooncake", "p2pnccl"), "sglang": ("mooncake", "nixl"),
                                        "trtllm": ("default", "ucx", "nixl", "mpi")}
# When a request's KV moves: once its prefill is done ("after"), or chunk by chunk as the prefill goes ("chunked")
OVERLAP: dict[str, str] = {"vllm": "after", "sglang": "chunked", "trtllm": "after"}
# Whether the client's first token waits for a decode forward (vLLM: the decode computes it after the pull;
# TensorRT-LLM: the generation server's first step) or is the prefill's, emitted at pick-up (SGLang)
FIRST_TOKEN_STEP: dict[str, bool] = {"vllm": True, "sglang": False, "trtllm": True}
# Whether the prefill waits for the decode to reserve the request's KV first: SGLang's decode scheduler pre-allocates
# in its loop, between decode steps (`disaggregation/decode.py: DecodePreallocQueue`), and a prefill starts only
# once its decode has sent the KV indices (`disaggregation/prefill.py: PrefillBootstrapQueue.pop_bootstrapped`);
# vLLM's decode pulls after the prefill (NixlConnector) and TensorRT-LLM's generation request follows the context one
PREALLOCATES: dict[str, bool] = {"vllm": False, "sglang": True, "trtllm": False}


@dataclass(frozen=True)
class Pool:
    """`workers` copies of one plan serving one role, from GPU `first_gpu` on."""

    role: Role
    case: Case
    workers: int
    first_gpu: int = 0

    @property
    def plan(self) -> Plan:
        return self.case.plan

    @property
    def gpus(self) -> int:
        return self.workers * self.plan.gpus

    @property
    def ranks(self) -> int:
        """Schedulers in the pool: every worker's attention-DP ranks."""
        return self.workers * self.plan.dp

    def label(self) -> str:
        return f"{self.workers} x {self.plan.label()}"


@dataclass(frozen=True)
class DisaggPlan:
    """A disaggregated deployment; `refused` says why it cannot run (None: it can)."""

    arch: ModelArch
    hw: HardwareProfile
    prefill: Pool
    decode: Pool
    backend: str
    link: PoolLink
    budget: int
    refused: str | None = None

    @property
    def engine(self) -> str:
        return self.prefill.case.args.engine

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def runs(self) -> bool:
        return self.refused is None

    def kv(self, prompt: float) -> KvBytes:
        """One request's KV between a prefill rank and a decode rank (`disagg_transfer.kv_bytes`)."""
        return kv_bytes(self.arch, self.prefill.plan, self.decode.plan, kv_elem_bytes(self.decode.case.args),
                        prompt)

    def transfer_s(self, prompt: float) -> float:
        """Seconds to move one request's KV over the pools' link, nothing else on it."""
        return self.link.seconds(self.kv(prompt))

    def label(self) -> str:
        return f"{self.prefill.label()} prefill + {self.decode.label()} decode"


def check_backend(engine: str, backend: str | None) -> str:
    """The engine's transfer backend: `backend`, or its default; one line when the engine lacks it."""
    offered = BACKENDS[engine]
    if backend is None:
        return offered[0]
    name = backend.lower().replace("-", "").replace("_", "").removesuffix("connector")
    if name not in offered:
        raise AdvisorError(f"KV transfer backend {backend!r}: {engine} offers {', '.join(offered)}")
    return name


def hetero_reason(arch: ModelArch, engine: str, prefill: Plan, decode: Plan) -> str | None:
    """Why the engine cannot move KV between these two plans (module docstring), or None."""
    hybrid = any(g.kind in ("linear", "mamba") for g in arch.attn_groups)
    if engine == "vllm" and hybrid and prefill.tp != decode.tp:
        return (f"prefill TP{prefill.tp} and decode TP{decode.tp}: vLLM's NixlConnector needs the same TP on both "
                "sides for hybrid linear-attention/Mamba models (docs/features/nixl_connector_compatibility.md, "
                "Hetero TP)")
    heads = {(g.kv_heads, g.k_dim, g.latent_dim) for g in arch.attn_groups if g.kind not in ("linear", "mamba")}
    if engine == "trtllm" and (hybrid or len(heads) > 1):
        return ("TensorRT-LLM's disaggregated serving needs every layer's KV cache homogeneous (one dtype and head "
                "count, docs/source/features/disagg-serving.md FAQ); this model's layers hold "
                + ("linear-attention state" if hybrid else "different KV heads"))
    return None


def make_disagg(arch: ModelArch, hw: HardwareProfile, prefill: Plan, x: int, decode: Plan, y: int,
                settings: Settings, decode_settings: Settings | None = None, *, backend: str | None = None,
                cluster: Cluster | None = None, budget: int | None = None, link: KvLink | None = None,
                cases: tuple[Case, Case] | None = None) -> DisaggPlan:
    """x prefill workers at `prefill` and y decode workers at `decode` (the decode side under `decode_settings`,
    default the same flags) on `cluster` (default one node of `hw`) within `budget` GPUs (default all of them);
    `link` replaces the pools' link (a what-if); `cases`: the two sides' cases when already made.

    One line (AdvisorError) for input that describes no deployment: x or y below 1, a backend the engine lacks, two
    engines or two KV dtypes. A deployment that cannot run is returned with `refused` set: more GPUs than the
    budget, a side that does not fit or that the engine cannot form, plans the engine cannot pair."""
    ds = decode_settings or settings
    if x < 1 or y < 1:
        raise AdvisorError(f"{x} prefill and {y} decode workers: a disaggregated deployment needs at least one of "
                           "each")
    if ds.engine != settings.engine:
        raise AdvisorError(f"prefill on {settings.engine} and decode on {ds.engine}: the KV transfer joins workers "
                           "of one engine")
    name = check_backend(settings.engine, backend)
    cl = cluster or Cluster(hw)
    budget = min(budget or cl.gpus, cl.gpus)
    multi = cl if cl.multi_node else None
    pc, dc = cases or (make_case(arch, prefill, hw, settings, cluster=multi),
                       make_case(arch, decode, hw, ds, cluster=multi))
    p_pool, d_pool = Pool("prefill", pc, x), Pool("decode", dc, y, first_gpu=x * prefill.gpus)
    need = p_pool.gpus + d_pool.gpus
    plink = PoolLink(((link, 1.0),)) if link is not None else (
        pool_link(cl, prefill.gpus, x, decode.gpus, y) if need <= cl.gpus else PoolLink(()))
    refused = None
    if need > budget:
        refused = (f"needs {need} GPUs ({x} x {prefill.gpus} prefill + {y} x {decode.gpus} decode), the budget is "
                   f"{budget}")
    elif pc.args.kv_cache_dtype != dc.args.kv_cache_dtype:
        raise AdvisorError(f"KV cache {pc.args.kv_cache_dtype} on the prefill side and {dc.args.kv_cache_dtype} on "
                           "the decode side: both sides must store the same KV dtype (vLLM's compatibility hash, "
                           "TensorRT-LLM's homogeneous KV)")
    else:
        refused = _side_reason("prefill", pc) or _side_reason("decode", dc) \
            or hetero_reason(arch, settings.engine, prefill, decode)
    return DisaggPlan(arch=arch, hw=hw, prefill=p_pool, decode=d_pool, backend=name, link=plink, budget=budget,
                      refused=refused)


def _side_reason(role: str, case: Case) -> str | None:
    if case.runs:
        return None
    return f"{role} {case.plan.label()}: {case.reason}"
