"""Parallel plans (TP, PP, attention-DP, EP) and the engine's rules for which ones can run.

Rules and their vLLM sources:
- heads % TP (`QKVParallelLinear`); KV heads either split (kv % TP) or replicated (TP % kv)
- EP size is exactly TP x DP with `--enable-expert-parallel` (`FusedMoEParallelConfig.make`); experts % EP
- block-FP8 MoE: (I / moe_tp) % 128 (`fp8.py:Fp8MoEMethod.create_weights`); INT4 group g: (I / tp) % g;
  NVFP4: (K / tp) % 16 (`modelopt.py`)
- GPUs used <= GPUs in the node (or the cluster); PP stages <= layers
- on a cluster (`hardware/cluster.py`): a TP group inside one fast domain (a node's NVLink or PCIe, or an NVL72
  rack), or over whole NVLink domains joined by the fabric (TP16 on two 8-GPU nodes), costed with its allreduces
  across the NICs: every engine runs it (vLLM `docs/serving/distributed_serving.md`: "tensor_parallel_size to the
  number of GPUs ... across all machines" under Ray; SGLang `docs/references/multi_node_deployment/
  multi_node.md`: Llama 3.1 405B `--tp 16 --nnodes 2`; TensorRT-LLM through MPI, the TP16 H100 runs of
  tests/data/bench/silicon_disagg_dev.csv), though
  vLLM's guide prefers "the tensor parallel size to the number of GPUs in each node, and the pipeline parallel size
  to the number of nodes". Refused: a TP group straddling a domain boundary unevenly (TP6 x DP2 on 8-GPU nodes),
  and TP across nodes of PCIe boxes (no NVLink: every layer's allreduce would leave through the host's PCIe and
  the NIC; no engine documents it). PP, DP and EP may cross nodes
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from advisor.arch.model import ModelArch, WeightGroup

if TYPE_CHECKING:
    from advisor.hardware.cluster import Cluster


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)
    dp: int = Field(1, ge=1)
    ep: int = Field(1, ge=1)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def moe_tp(self) -> int:
        """How many ways each expert's intermediate dim is split: TP x DP ranks share the MoE, EP of
        them hold whole experts (vLLM `fused_moe/config.py: FusedMoEParallelConfig.make`)."""
        return self.tp * self.dp // self.ep

    def label(self) -> str:
        parts = [f"TP{self.tp}"]
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        if self.dp > 1:
            parts.append(f"DP{self.dp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        return "+".join(parts)


def rank_layout(plan: Plan, engine: str = "vllm") -> np.ndarray:
    """GPU (cluster-wide, node-major) of every rank as an array [dp, pp, tp], in the engine's rank order.

    vLLM: `ExternalDP x DP x PP x PCP x TP`, TP fastest (`vllm/distributed/parallel_state.py:
    initialize_model_parallel`, `all_ranks = torch.arange(world_size).reshape(-1, dp, pp, pcp, tp)`), so one DP
    replica's stages are adjacent. SGLang and TensorRT-LLM count attention-DP inside the TP group and PP outside
    it: TensorRT-LLM `tensorrt_llm/mapping.py: Mapping` (`rank = pp_rank * tp_size * cp_size + cp_rank * tp_size +
    tp_rank`), SGLang `srt/entrypoints/engine.py` (`gpu_id = base_gpu_id + pp_rank * tp_size_per_node +
    tp_rank`), so one stage's DP x TP ranks are adjacent."""
    n = plan.gpus
    if engine == "vllm":
        return np.arange(n).reshape(plan.dp, plan.pp, plan.tp)
    return np.arange(n).reshape(plan.pp, plan.dp, plan.tp).transpose(1, 0, 2)


def cluster_reason(plan: Plan, cluster: Cluster, engine: str = "vllm") -> str | None:
    """Why the plan cannot be placed on the cluster: more GPUs than it has, or a TP group that would cross the
    NICs between fast domains (see the module docstring), or None."""
    if plan.gpus > cluster.gpus:
        return (f"needs {plan.gpus} GPUs (TP{plan.tp} x PP{plan.pp} x DP{plan.dp}), the cluster has {cluster.gpus} "
                f"({cluster.nodes} x {cluster.gpus_per_node})")
    layout = rank_layout(plan, engine).reshape(-1, plan.tp)
    domain = cluster.fast_domain_gpus
    if plan.tp > 1 and bool(np.any(layout[:, 0] // domain != layout[:, -1] // domain)) \
            and not tp_across_nics(plan, cluster):
        where = (f"one {cluster.fast_link} domain holds {domain} GPUs" if cluster.rack_nodes > 1
                 else f"a node holds {domain} GPUs on {cluster.fast_link}")
        how = ("nodes without NVLink" if cluster.fast_link != "NVLink" or cluster.fabric is None
               else "a group that straddles a domain unevenly")
        return (f"TP{plan.tp} would cross the NICs between nodes ({where}): across the NICs TP runs only over whole "
                f"NVLink domains, not on {how} (one allreduce per layer over the network; vLLM's multi-node guide: "
                "TP = GPUs per node, PP = nodes); use PP, DP or EP across nodes")
    return None


def tp_across_nics(plan: Plan, cluster: Cluster) -> bool:
    """Whether a TP group that leaves its fast domain is a plan the engines run (module docstring): NVLink domains
    joined by a fabric, and every TP group over whole domains (TP a multiple of the domain's GPUs)."""
    return cluster.fast_link == "NVLink" and cluster.fabric is not None and plan.tp % cluster.fast_domain_gpus == 0


def invalid_reason(arch: ModelArch, plan: Plan, num_gpus: int, weights: tuple[WeightGroup, ...],
                   engine: str = "vllm", sm: str = "", cluster: Cluster | None = None) -> str | None:
    """Why the engine cannot run this plan on GPUs of compute capability `sm` (on `num_gpus` GPUs of one node, or
    on `cluster` when it spans several nodes), or None."""
    if cluster is not None and cluster.multi_node:
        if why := cluster_reason(plan, cluster, engine):
            return why
    elif plan.gpus > num_gpus:
        return f"needs {plan.gpus} GPUs (TP{plan.tp} x PP{plan.pp} x DP{plan.dp}), the node has {num_gpus}"
    if engine == "trtllm" and (why := _trtllm_reason(plan, weights, sm)):
        return why
    if plan.pp > arch.num_layers:
        return f"PP{plan.pp} exceeds the {arch.num_layers} layers"
    for g in arch.attn_groups:
        if g.num_heads % plan.tp:
            return f"{g.num_heads} attention heads are not divisible by TP{plan.tp}"
        if g.kind in ("full", "sliding") and g.kv_heads % plan.tp and plan.tp % g.kv_heads:
            return f"{g.kv_heads} KV heads neither divide nor are divisible by TP{plan.tp}"
    moe = arch.moe
    if plan.ep > 1:
        if moe is None:
            return "EP needs a mixture-of-experts model"
        if engine != "trtllm" and plan.ep != plan.tp * plan.dp:
            return (f"EP{plan.ep} is not TP x DP = {plan.tp * plan.dp}: vLLM's expert-parallel group is all TP x DP "
                    "ranks (--enable-expert-parallel, FusedMoEParallelConfig.make)")
        if (plan.tp * plan.dp) % plan.ep:  # TensorRT-LLM: moe_tp x moe_ep = TP x DP (`MoEParallelConfig`)
            return f"EP{plan.ep} does not divide TP x DP = {plan.tp * plan.dp}"
        if moe.num_experts % plan.ep:
            return f"{moe.num_experts} experts are not divisible by EP{plan.ep}"
    return _shape_reason(arch, plan, weights)


def _trtllm_reason(plan: Plan, weights: tuple[WeightGroup, ...], sm: str) -> str | None:
    """Plans TensorRT-LLM 1.0-1.2 cannot form. Attention DP spans all `--tp_size` ranks: attention and dense MLPs
    run unsplit on each (`enable_attention_dp`; `_torch/models/modeling_deepseekv3.py: _compute_mlp_tp_size`, "If
    using attention DP, the MLP also uses DP instead of TP"), so TP must be 1 beside DP. Its quantization matrix
    lists no block-FP8 kernels on SM120 (`docs/source/features/quantization.md`)."""
    if plan.dp > 1 and plan.tp > 1:
        n = plan.tp * plan.dp
        return (f"TensorRT-LLM's attention DP spans every rank (--tp_size {n} with enable_attention_dp: attention "
                f"TP 1), so TP{plan.tp} x DP{plan.dp} cannot be formed; use TP1 x DP{n}")
    if sm == "sm120" and any(w.fmt == "fp8-block" for w in weights):
        return "TensorRT-LLM 1.0-1.2 has no block-FP8 kernels for SM120 (its quantization support matrix)"
    return None


def _shape_reason(arch: ModelArch, plan: Plan, weights: tuple[WeightGroup, ...]) -> str | None:
    """Quantized shapes must split evenly into the format's blocks/groups on every rank."""
    fmts = {w.name: w.fmt for w in weights}
    moe = arch.moe
    # FP4 MoE kernels pad each rank's intermediate up to their tile (vLLM `fused_moe/oracle/mxfp4.py:
    # mxfp4_round_up_hidden_size_and_intermediate_size`: MXFP4 backends round I/t to 64/128/256; NVFP4
    # gpt-oss runs at TP8 in silicon_dev.csv with 2880/8 = 360), so only block-FP8 and INT4 group shapes are
    # hard limits.
    if moe is not None and "routed_experts" in fmts and fmts["routed_experts"] not in ("nvfp4", "mxfp4"):
        per_rank = moe.expert_intermediate / plan.moe_tp
        need = _granule(fmts["routed_experts"], arch)
        if per_rank != int(per_rank) or need and int(per_rank) % need:
            split = f"TP{plan.tp}" + (f"xDP{plan.dp}" if plan.dp > 1 else "")
            hint = " (use a smaller TP or EP)" if plan.ep == 1 else ""
            return (f"{fmts['routed_experts']} experts: intermediate {moe.expert_intermediate}/{plan.moe_tp} "
                    f"({split}) = {per_rank:g} is not a multiple of {need}{hint}")
    dense_i = moe.dense_intermediate if moe is not None else arch.mlp_intermediate
    if dense_i and "dense_mlp" in fmts:
        need = _granule(fmts["dense_mlp"], arch)
        if need and (dense_i % plan.tp or (dense_i // plan.tp) % need):
            return f"{fmts['dense_mlp']} dense MLP: intermediate {dense_i}/TP{plan.tp} is not a multiple of {need}"
    return None


def _granule(fmt: str, arch: ModelArch) -> int:
    if fmt == "fp8-block":
        return arch.quant_block[0] if arch.quant_block else 128
    if fmt.startswith("int4-g"):
        return int(fmt.removeprefix("int4-g"))
    if fmt == "nvfp4":
        return 16
    return 1


def candidate_plans(arch: ModelArch, num_gpus: int, cluster: Cluster | None = None) -> Iterator[Plan]:
    """Every (tp, pp, dp, ep) on up to `num_gpus` GPUs: any TP, PP and DP whose product fits (validity decides;
    vLLM, SGLang and TensorRT-LLM take any integer sizes, e.g. PP3 on 3 or 6 GPUs), EP in {1, TP x DP} (vLLM's
    only EP sizes).

    On a multi-node cluster (`_cluster_plans`): TP up to one fast domain, or whole NVLink domains in powers of two
    across the NICs (`tp_across_nics`), PP and DP in
    powers of two or the size that fills the cluster (PP = nodes; DP x TP = every GPU: the wide-EP deployments,
    e.g. DP72 on nine 8-GPU nodes): every integer size on hundreds of GPUs would be thousands of plans."""
    if cluster is not None and cluster.multi_node:
        yield from _cluster_plans(arch, cluster)
        return
    for tp in range(1, num_gpus + 1):
        for pp in range(1, num_gpus // tp + 1):
            for dp in range(1, num_gpus // (tp * pp) + 1):
                yield Plan(tp=tp, pp=pp, dp=dp)
                if arch.moe is not None and tp * dp > 1:
                    yield Plan(tp=tp, pp=pp, dp=dp, ep=tp * dp)


def spanning_plans(cluster: Cluster | None, moe: bool) -> list[Plan]:
    """The plans `advisor fit` shows for a multi-node cluster beside one node's: TP over a node and PP over the
    nodes (vLLM's multi-node rule), and for MoE models wide EP over every GPU (attention-DP, TP1) and TP over a node
    with DP over the nodes; none on one node."""
    if cluster is None or not cluster.multi_node:
        return []
    g, n = cluster.gpus_per_node, cluster.nodes
    plans = [Plan(tp=g, pp=n)]
    if moe:
        plans += [Plan(tp=1, dp=cluster.gpus, ep=cluster.gpus), Plan(tp=g, dp=n, ep=cluster.gpus)]
    return plans


def _cluster_plans(arch: ModelArch, cluster: Cluster) -> Iterator[Plan]:
    n = cluster.gpus
    twos = [k for k in (2 ** i for i in range(11)) if k <= n]
    wide = [cluster.fast_domain_gpus * k for k in twos[1:] if cluster.fast_domain_gpus * k <= n] \
        if tp_across_nics(Plan(tp=cluster.fast_domain_gpus), cluster) else []
    for tp in [*range(1, cluster.fast_domain_gpus + 1), *wide]:
        pps = {k for k in twos if tp * k <= n} | ({cluster.nodes} if tp * cluster.nodes <= n else set())
        for pp in sorted(pps):
            fill = {n // (tp * pp)} if n % (tp * pp) == 0 else set()
            for dp in sorted({k for k in twos if tp * pp * k <= n} | fill):
                yield Plan(tp=tp, pp=pp, dp=dp)
                if arch.moe is not None and tp * dp > 1:
                    yield Plan(tp=tp, pp=pp, dp=dp, ep=tp * dp)
