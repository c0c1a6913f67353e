"""The collectives of one forward pass: the one list that timing, the report and `inspect` all read.

Each entry says what issues it, the op, the group it spans, how many calls one forward makes (all layers,
all PP stages) and how its message grows. Sources (vLLM):
- `layers/linear.py: RowParallelLinear.forward`: one allreduce of `[T, H]` per row-parallel output
  (attention `o_proj`, mixer `out_proj`, MLP `down_proj`); `fused_moe/runner/moe_runner.py:
  _maybe_reduce_final_output`: one per MoE layer (shared experts join the same reduce);
- `vocab_parallel_embedding.py: VocabParallelEmbedding.forward`: one allreduce per forward;
- `layers/mamba/linear_attn.py: MiniMaxText01RMSNormTP.forward_qk`: MiniMax-M2's fp32 `[T, 2]` q/k
  variance allreduce per attention layer (`qk_norm_type: per_layer`);
- `logits_processor.py: LogitsProcessor._gather_logits`: all-gather of the sampled rows' logits;
- with DP > 1 the MoE reduce becomes dispatch (all-gather) and combine (reduce-scatter) over TP x DP
  (`fused_moe/config.py: FusedMoEParallelConfig.make`, `device_communicators/all2all.py:
  AgRsAll2AllManager`), block-FP8 models dispatch FP8 activations (`prepare_finalize/naive_dp_ep.py:
  _quantize_and_setup_dispatch`); one `[4 x dp]` int32 batch-size sync per step (`v1/worker/dp_utils.py:
  coordinate_batch_across_dp`); PP stages send `[T, H]` to the next (`v1/worker/gpu_model_runner.py`).

On a cluster (`hardware/cluster.py`) each collective also says how many fast domains its group spans (1: inside
one node's NVLink/PCIe or one NVL72 rack; more: its ring or tree crosses the NICs), from the engine's rank order
(`plan.rank_layout`): a PP send between stages on different nodes is its own slot (`pp_send_net`), and MoE
dispatch/combine whose EP group crosses nodes over GPUDirect RDMA runs as all-to-all with DeepEP, the backend each
engine documents for multi-node EP (vLLM `docs/serving/expert_parallel_deployment.md`: `deepep_low_latency` for decode,
`deepep_high_throughput` for prefill; SGLang `--moe-a2a-backend deepep`, `docs/advanced_features/
expert_parallelism.md`; TensorRT-LLM WideEP `AlltoallMethodType.DeepEP/DeepEPLowLatency`, `_torch/modules/
fused_moe/fused_moe_wide_ep.py`): each rank sends its tokens' top-k copies, `T x topk x hidden`, dispatch in FP8
(DeepEP low-latency dispatch casts to FP8 with one scale per 128 elements, `deep_ep/buffer.py:
low_latency_dispatch(use_fp8=True)`), combine in BF16. One node, or a plan that crosses no NIC, is as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from advisor.arch.model import ModelArch, WeightGroup
from advisor.cost.plan import Plan, rank_layout

if TYPE_CHECKING:
    from advisor.hardware.cluster import Cluster

ACT_BYTES = 2  # activations between layers are BF16 for every checkpoint format (vLLM model dtype)
# Activations dispatched to experts under DP+EP: block-FP8 models quantize before dispatch (1 + 4/128
# bytes per element), others BF16.
DISPATCH_BYTES = {"fp8-block": 1 + 4 / 128}
DEEPEP_DISPATCH_BYTES = 1 + 4 / 128  # FP8 with a float32 scale per 128 elements (DeepEP low-latency dispatch)
# TensorRT-LLM's NVLink all-to-all moves the MoE's input as the experts' recipe quantized it, before dispatch
# (tech blog 18, "Quantization-Agnostic Communication"; its "Post-Quant Dispatch" table: NVFP4 4032 bytes per
# 7168-element token, one FP8 scale per 16; MXFP8 7392): bytes per element by the experts' format, else BF16. The
# older MNNVL path does it for NVFP4 (`_torch/modules/fused_moe/fused_moe_wide_ep.py`: `use_postquant_alltoall`,
# TRTLLM_MOE_POST_QUANT_ALLTOALLV on by default, `has_nvfp4()`)
NVLINK_DISPATCH_BYTES = {"nvfp4": 0.5 + 1 / 16, "fp8-block": 1 + 4 / 128, "fp8": 1.0}
# the name under which each engine runs DeepEP for EP across nodes, as its printed command selects it
# (`decide/multinode.py`): vLLM `--all2all-backend deepep_low_latency` (docs/serving/expert_parallel_deployment.md:
# "multi-node decode"), SGLang `--moe-a2a-backend deepep` (auto mode), TensorRT-LLM its own pick
# (`_torch/modules/fused_moe/communication/communication_factory.py: create_strategy`, DeepEP where its NVLink
# kernels cannot reach; `hardware/a2a_backends.py: default_backend`)
DEEPEP_BACKEND: dict[str, str | None] = {"vllm": "deepep_low_latency", "sglang": "deepep", "trtllm": None}
QK_VARIANCE_BYTES = 8  # [T, 2] fp32 per token

Scale = Literal["tokens", "dp_tokens", "sampled", "fixed"]


@dataclass(frozen=True)
class Slot:
    """A timing class: collectives with the same op and message law, summed by calls before timing."""

    name: str
    op: str
    scales_with: Scale  # message = units * bytes_per_unit; units: padded tokens per DP rank, tokens of every
    # DP rank, sampled rows, or one (a fixed-size message)
    backend: str | None = None  # the kernel library when it is not the engine's default (DeepEP's all-to-all)


TP_HIDDEN = Slot("tp_hidden", "allreduce", "tokens")
TP_TINY = Slot("tp_tiny", "allreduce", "tokens")
LOGITS = Slot("logits", "allgather", "sampled")
DISPATCH = Slot("moe_dispatch", "allgather", "dp_tokens")
COMBINE = Slot("moe_combine", "reducescatter", "dp_tokens")
PP_SEND = Slot("pp_send", "p2p", "tokens")
DP_SYNC = Slot("dp_sync", "allreduce", "fixed")
PP_SEND_NET = Slot("pp_send_net", "p2p", "tokens")  # a PP send between stages on different fast domains
A2A_DISPATCH = Slot("a2a_dispatch", "dispatch", "tokens", "deepep")  # wide EP across nodes: DeepEP's all-to-all
A2A_COMBINE = Slot("a2a_combine", "combine", "tokens", "deepep")
SLOTS = (TP_HIDDEN, TP_TINY, LOGITS, DISPATCH, COMBINE, PP_SEND, DP_SYNC, PP_SEND_NET, A2A_DISPATCH, A2A_COMBINE)


@dataclass(frozen=True)
class Collective:
    """One kind of collective in a forward: `calls` of `slot.op` over `group` GPUs, each moving
    `units x bytes_per_unit` bytes (the nccl-tests message size)."""

    cause: str
    slot: Slot
    group: int
    calls: int
    bytes_per_unit: float
    layers: int = 0  # decoder layers that issue it (0: once per forward)
    domains: int = 1  # fast domains the group spans (> 1: it crosses the NICs between nodes)

    @property
    def op(self) -> str:
        return self.slot.op


def step_collectives(arch: ModelArch, plan: Plan, weights: tuple[WeightGroup, ...] | None = None,
                     cluster: Cluster | None = None, engine: str = "vllm", deepep: bool = False
                     ) -> tuple[Collective, ...]:
    """Every collective one forward issues under `plan` (empty on one GPU); on a multi-node `cluster`, with the fast
    domains each group spans under `engine`'s rank order (see the module docstring); `deepep`: the MoE exchange as
    DeepEP all-to-all wherever EP runs (`Settings.moe_a2a_backend`)."""
    out: list[Collective] = []
    spans = _spans(plan, cluster, engine) if cluster is not None and cluster.multi_node else {}
    h = arch.hidden_size * ACT_BYTES
    moe_layers = arch.moe.moe_layers if arch.moe is not None else 0
    attn_layers = sum(g.layers for g in arch.attn_groups if g.kind in ("full", "sliding", "mla"))
    mixer_layers = sum(g.layers for g in arch.attn_groups)
    if plan.tp > 1:
        t = spans.get("tp", 1)  # > 1: a TP group over whole NVLink domains across the NICs (`plan.tp_across_nics`)
        out.append(Collective("attention/mixer output projection", TP_HIDDEN, plan.tp, mixer_layers, h,
                              mixer_layers, t))
        if arch.dense_mlp_layers:
            out.append(Collective("dense MLP down_proj", TP_HIDDEN, plan.tp, arch.dense_mlp_layers, h,
                                  arch.dense_mlp_layers, t))
        if moe_layers and plan.dp == 1:
            out.append(Collective("MoE final reduce", TP_HIDDEN, plan.tp, moe_layers, h, moe_layers, t))
        out.append(Collective("vocab-parallel embedding", TP_HIDDEN, plan.tp, 1, h, domains=t))
        if arch.qk_norm_full_width:
            out.append(Collective("full-width q/k RMSNorm variance (fp32)", TP_TINY, plan.tp, attn_layers,
                                  QK_VARIANCE_BYTES, attn_layers, t))
        out.append(Collective("logits all-gather", LOGITS, plan.tp, 1, arch.vocab_size * ACT_BYTES, domains=t))
    if moe_layers and plan.dp > 1:
        out += _moe_exchange(arch, plan, weights, moe_layers, spans.get("ep", 1), deepep_ready(cluster),
                             mnnvl_alltoall(arch, plan, cluster, engine), deepep)
    if plan.pp > 1:
        net = spans.get("pp_net", 0)
        out.append(Collective("pipeline stage send", PP_SEND, 2, plan.pp - 1 - net, h))
        out.append(Collective("pipeline stage send between nodes", PP_SEND_NET, 2, net, h, domains=2))
    if plan.dp > 1:
        out.append(Collective("DP batch-size sync", DP_SYNC, plan.dp, 1, 16.0 * plan.dp, domains=spans.get("dp", 1)))
    return tuple(c for c in out if c.calls > 0)


def _moe_exchange(arch: ModelArch, plan: Plan, weights: tuple[WeightGroup, ...] | None, moe_layers: int,
                  domains: int, rdma: bool = True, nvlink_a2a: bool = False, deepep: bool = False
                  ) -> list[Collective]:
    """MoE dispatch and combine over the TP x DP ranks: all-gather / reduce-scatter of every rank's tokens inside
    one fast domain (vLLM's default `allgather_reducescatter`), DeepEP all-to-all of each rank's top-k copies when
    the group crosses nodes where DeepEP runs (`deepep_ready`: its internode and low-latency kernels write into remote
    GPU memory through NVSHMEM, deepseek-ai/DeepEP README); elsewhere (a PCIe box, a fabric without GPUDirect RDMA),
    the NCCL all-gather / reduce-scatter across the nodes (vLLM `allgather_reducescatter`, SGLang
    `--moe-a2a-backend none`); `deepep`: DeepEP all-to-all inside a fast domain too, as the user's backend asks;
    `nvlink_a2a`: TensorRT-LLM's NVLink all-to-all, its dispatch in the experts' input format
    (`NVLINK_DISPATCH_BYTES`)."""
    assert arch.moe is not None
    n = plan.tp * plan.dp
    h = arch.hidden_size * ACT_BYTES
    experts = [w.fmt for w in weights or arch.weights if w.shard == "expert"]
    if (domains > 1 and rdma and plan.ep > 1) or nvlink_a2a or (deepep and plan.ep > 1):
        k = arch.moe.experts_per_token
        kind = "NVLink all-to-all" if nvlink_a2a else "DeepEP all-to-all"
        b = max((NVLINK_DISPATCH_BYTES.get(f, ACT_BYTES) for f in experts), default=ACT_BYTES) if nvlink_a2a \
            else DEEPEP_DISPATCH_BYTES
        return [Collective(f"MoE dispatch ({kind})", A2A_DISPATCH, n, moe_layers, k * arch.hidden_size * b,
                           moe_layers, domains),
                Collective(f"MoE combine ({kind})", A2A_COMBINE, n, moe_layers, k * h, moe_layers,
                           domains)]
    fmt = max(experts, key=lambda f: DISPATCH_BYTES.get(f, ACT_BYTES), default="bf16")
    return [Collective("MoE dispatch", DISPATCH, n, moe_layers, arch.hidden_size * DISPATCH_BYTES.get(fmt, ACT_BYTES),
                       moe_layers, domains),
            Collective("MoE combine", COMBINE, n, moe_layers, h, moe_layers, domains)]


def mnnvl_alltoall(arch: ModelArch, plan: Plan, cluster: Cluster | None, engine: str) -> bool:
    """Whether TensorRT-LLM runs its NVLink all-to-all (MNNVL) for the MoE exchange: attention DP with MoE TP 1, EP
    above top-k and MNNVL memory (`_torch/modules/fused_moe/fused_moe_cutlass.py: select_alltoall_method_type`), here
    an EP group over several trays of one NVLink rack (MNNVL fabric memory spans the rack's trays; the one-node
    answer is left as it was). Timed by `hardware/wide_ep.py: one_sided_us`."""
    if engine != "trtllm" or cluster is None or not cluster.multi_node or arch.moe is None or plan.dp == 1:
        return False
    topo = cluster.node.topology
    if topo.nvlink_domain_size <= topo.num_gpus or plan.ep != plan.tp * plan.dp \
            or plan.ep <= arch.moe.experts_per_token:
        return False
    g = rank_layout(plan, engine)[:, 0, :]  # rank 0's stage: [dp, tp] -> GPU
    return bool(np.unique(g // cluster.gpus_per_node).size > 1 and np.unique(g // cluster.fast_domain_gpus).size == 1)


def deepep_ready(cluster: Cluster | None) -> bool:
    """Whether DeepEP can run across the cluster's nodes: NVLink between a node's GPUs and an RDMA fabric with
    GPUDirect RDMA (deepseek-ai/DeepEP README, Requirements; `hardware/a2a_backends.py: unusable`)."""
    if cluster is None or cluster.fabric is None:
        return True
    return cluster.node.interconnect_class == "nvlink" and cluster.fabric.gpudirect_rdma


def deepep_exchange(plan: Plan, cluster: Cluster | None, engine: str = "vllm") -> bool:
    """Whether a MoE model's dispatch/combine under `plan` runs as DeepEP all-to-all (`_moe_exchange`): its EP group
    crosses fast domains where DeepEP can run (`deepep_ready`). The printed command selects the same backend."""
    if cluster is None or not cluster.multi_node or plan.dp == 1 or plan.ep == 1:
        return False
    return deepep_ready(cluster) and _spans(plan, cluster, engine)["ep"] > 1


def _spans(plan: Plan, cluster: Cluster, engine: str) -> dict[str, int]:
    """Fast domains spanned by rank 0's EP (TP x DP of one stage), DP and TP groups, and how many of one replica's
    PP sends cross between fast domains (`plan.rank_layout`: [dp, pp, tp] -> GPU)."""
    g = rank_layout(plan, engine) // cluster.fast_domain_gpus  # [dp, pp, tp] -> fast domain
    return {"ep": int(np.unique(g[:, 0, :]).size), "dp": int(np.unique(g[:, 0, 0]).size),
            "tp": int(np.unique(g[0, 0, :]).size), "pp_net": int(np.count_nonzero(np.diff(g[0, :, 0])))}


def slot_rows(collectives: tuple[Collective, ...]) -> dict[str, tuple[float, float, float, float]]:
    """Per slot name: (calls, bytes per unit, group, fast domains spanned) with the calls of a slot's collectives
    summed; a slot's collectives share message law, group and span in every plan (checked)."""
    rows: dict[str, tuple[float, float, float, float]] = {s.name: (0.0, 0.0, 1.0, 1.0) for s in SLOTS}
    for c in collectives:
        calls, unit, group, domains = rows[c.slot.name]
        if calls and (unit, group, domains) != (c.bytes_per_unit, c.group, c.domains):
            raise ValueError(f"slot {c.slot.name}: {c.cause} differs in message, group or span")
        rows[c.slot.name] = (calls + c.calls, c.bytes_per_unit, float(c.group), float(c.domains))
    return rows


def allreduce_summary(collectives: tuple[Collective, ...]) -> dict[str, float]:
    """Per-token allreduce counts and bytes of a forward: calls, payload handed to the allreduces for one
    token (summed over calls), and the group they span."""
    per_token = [c for c in collectives if c.op == "allreduce" and c.slot.scales_with == "tokens"]
    return {"calls": sum(c.calls for c in per_token),
            "payload_bytes_per_token": sum(c.calls * c.bytes_per_unit for c in per_token),
            "group": max((c.group for c in per_token), default=1)}
