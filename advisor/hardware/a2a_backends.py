"""Which all-to-all backend each engine runs for wide-EP dispatch/combine, and where each can run.

Defaults, as each engine's code has them:
- vLLM: `--all2all-backend allgather_reducescatter` (`vllm/config/parallel.py: ParallelConfig.all2all_backend`;
  `device_communicators/all2all.py: AgRsAll2AllManager`: all-gather every DP rank's tokens for dispatch,
  reduce-scatter for combine), on one node and across nodes alike. Others by flag: `deepep_high_throughput`
  (DeepEP normal, "multi-node prefill"), `deepep_low_latency` (DeepEP low-latency, "multi-node decode"), `pplx`
  ("single node"), `naive` (broadcast + all-reduce, testing): vLLM docs `serving/expert_parallel_deployment.md`
  (v0.12.0 table). vLLM main drops `pplx` and `naive` back to `allgather_reducescatter` with a warning
  (`config/parallel.py: _validate_parallel_config`, vllm-project/vllm@00193b82).
- SGLang: `--moe-a2a-backend none` (`srt/server_args.py`): with `--enable-dp-attention` the attention-DP ranks'
  tokens are gathered to every rank and the MoE output scattered back (`layers/dp_attention.py: dp_gather /
  dp_scatter`, all-gather or a zero-padded all-reduce), timed as all-gather + reduce-scatter; `--moe-a2a-backend
  deepep` with `--deepep-mode auto` (the default) runs DeepEP normal for batches with prefill and low-latency for
  decode-only batches (`layers/moe/utils.py: DeepEPMode.resolve(is_extend_in_batch)`).
- TensorRT-LLM (attention DP + MoE EP, `_torch/modules/fused_moe/communication/communication_factory.py:
  create_strategy`): NVLinkOneSided first, then NVLinkTwoSided, NcclEP, DeepEP, DeepEPLowLatency, and
  AllGatherReduceScatter as the fallback that always works (also when MoE TP > 1). The NVLink kernels need the EP
  group inside one NVLink domain (MNNVL symmetric memory: "NVLink-connected systems (DGX B200, GB200 NVL72, etc.)",
  TensorRT-LLM tech blog 18).

Where each can run: DeepEP needs "NVLink with full directed CUDA peer access between every pair of participating
intranode GPUs" and an "RDMA network for internode communication" (deepseek-ai/DeepEP README, Requirements; its
low-latency mode drives the NIC from the GPU, IBGDA, so GPUDirect RDMA); pplx (NVSHMEM) and TensorRT-LLM's NVLink
kernels need NVLink; the all-gather/reduce-scatter and naive backends are NCCL collectives and run anywhere NCCL
does, PCIe and TCP included. So a PCIe box without NVLink or RDMA runs vLLM's default, SGLang's default and
TensorRT-LLM's fallback: all-gather + reduce-scatter.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.errors import AdvisorError

# backend -> (engines' names for it, what it is)
BACKENDS: dict[str, tuple[str, str]] = {
    "agrs": ("vLLM allgather_reducescatter, SGLang none (DP attention), TensorRT-LLM AllGatherReduceScatter",
             "NCCL all-gather of every rank's tokens, reduce-scatter of the outputs"),
    "naive": ("vLLM naive (removed on main)", "NCCL broadcast of each rank's tokens, all-reduce of the outputs"),
    "pplx": ("vLLM pplx (removed on main)", "pplx-kernels one-sided NVSHMEM puts, single node"),
    "deepep_normal": ("vLLM deepep_high_throughput, SGLang deepep normal, TensorRT-LLM DeepEP",
                      "DeepEP normal kernels: one copy per distinct rank, SM-driven NVLink (+ RDMA across nodes)"),
    "deepep_ll": ("vLLM deepep_low_latency, SGLang deepep low_latency, TensorRT-LLM DeepEPLowLatency",
                  "DeepEP low-latency kernels: one message per (token, expert), CUDA-graph safe"),
    "deepep_auto": ("SGLang --moe-a2a-backend deepep --deepep-mode auto",
                    "DeepEP normal for batches with prefill, low-latency for decode-only batches"),
    "nvlink_one_sided": ("TensorRT-LLM NVLinkOneSided", "one-sided puts into peers' symmetric memory over NVLink"),
    "nvlink_two_sided": ("TensorRT-LLM NVLinkTwoSided", "two-sided all-to-all-v over NVLink"),
}
ENGINE_NAMES: dict[str, dict[str, str]] = {  # the engines' own spellings -> backend here
    "vllm": {"allgather_reducescatter": "agrs", "naive": "naive", "pplx": "pplx",
             "deepep_high_throughput": "deepep_normal", "deepep_low_latency": "deepep_ll"},
    "sglang": {"none": "agrs", "deepep": "deepep_auto", "deepep_normal": "deepep_normal",
               "deepep_low_latency": "deepep_ll"},
    "trtllm": {"ALLGATHER": "agrs", "NVLINK_ONE_SIDED": "nvlink_one_sided", "NVLINK_TWO_SIDED": "nvlink_two_sided",
               "DEEPEP": "deepep_normal", "DEEPEPLOWLATENCY": "deepep_ll"},
}


@dataclass(frozen=True)
class Fabric:
    """What the EP group's GPUs are joined by: NVLink inside the fast domain (else PCIe), whether the group crosses
    NICs, and whether those NICs do RDMA with GPUDirect (the NIC reads GPU memory)."""

    nvlink: bool
    crosses_nics: bool
    rdma: bool = False
    gpudirect: bool = False


def unusable(backend: str, fab: Fabric) -> str | None:
    """Why `backend` cannot run on `fab` (module docstring), or None."""
    if backend not in BACKENDS:
        raise AdvisorError(f"all-to-all backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend in ("agrs", "naive"):
        return None
    if not fab.nvlink:
        return f"{backend} needs NVLink between the GPUs of a node (PCIe here); use all-gather + reduce-scatter"
    if backend in ("pplx", "nvlink_one_sided", "nvlink_two_sided") and fab.crosses_nics:
        return f"{backend} runs inside one NVLink domain; this EP group crosses the NICs"
    if backend.startswith("deepep") and fab.crosses_nics and not (fab.rdma and fab.gpudirect):
        return f"{backend} across nodes needs an RDMA fabric with GPUDirect RDMA (IBGDA); this fabric has none"
    return None


def default_backend(engine: str, fab: Fabric, flag: str | None = None) -> tuple[str, str]:
    """(backend, one-line reason) the engine runs for wide-EP dispatch/combine on `fab`; `flag` is the engine's own
    name the user passed (vLLM `--all2all-backend`, SGLang `--moe-a2a-backend`, TensorRT-LLM
    `TRTLLM_FORCE_COMM_METHOD`). A flag the hardware cannot run is refused in one line."""
    if engine not in ENGINE_NAMES:
        raise AdvisorError(f"--engine {engine}: expected one of {', '.join(ENGINE_NAMES)}")
    if flag is not None:
        names = ENGINE_NAMES[engine]
        if flag not in names:
            raise AdvisorError(f"{engine} all-to-all backend {flag!r}: expected one of {', '.join(names)}")
        backend = names[flag]
        why = unusable(backend, fab)
        if why:
            raise AdvisorError(why)
        return backend, f"{engine} {flag} (set by flag)"
    if engine == "vllm":
        return "agrs", "vLLM's default all2all_backend allgather_reducescatter (config/parallel.py)"
    if engine == "sglang":
        return "agrs", "SGLang's default --moe-a2a-backend none: DP-attention gather/scatter over NCCL"
    for backend in ("nvlink_one_sided", "nvlink_two_sided", "deepep_normal"):
        if unusable(backend, fab) is None:
            return backend, f"TensorRT-LLM picks {BACKENDS[backend][0]} first that the hardware supports " \
                            "(communication_factory.py: create_strategy)"
    return "agrs", "TensorRT-LLM falls back to AllGatherReduceScatter: no NVLink all-to-all or DeepEP runs here"


def resolve_phase(backend: str, phase: str) -> str:
    """SGLang's `--deepep-mode auto`: normal kernels when the batch has prefill, low-latency for decode-only
    batches (`DeepEPMode.resolve(is_extend_in_batch)`); other backends are what they are."""
    if phase not in ("decode", "prefill"):
        raise AdvisorError(f"phase {phase!r}: expected decode or prefill")
    if backend == "deepep_auto":
        return "deepep_normal" if phase == "prefill" else "deepep_ll"
    return backend
