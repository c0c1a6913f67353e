"""Engine settings and workload that a prediction depends on, with each engine release's defaults and sources."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from advisor.engines import DEFAULT_MAX_MODEL_LEN, Engine, KvDtype, Release, WeightDtype, release

GiB = 2**30
# vLLM `engine/arg_utils.py:EngineArgs._set_default_args` (v0.11.0 line 1605 ... v0.33.0 line 2973): the
# OpenAI server on devices with >= 70 GiB that are not A100 uses max_num_batched_tokens 8192 and max_num_seqs
# 1024, else 2048 / 256; from v0.30.0 devices with >= 160 GiB use 16384 / 1024 (`Release.big_tier_gib`).
BIG_GPU_BYTES = 70 * GiB


class Settings(BaseModel):
    """Engine flags (`vllm serve ...`). None = the engine release's default for this model/GPU."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_model_len: int | None = Field(None, ge=1)
    # vLLM --gpu-memory-utilization; SGLang's --mem-fraction-static; TensorRT-LLM's --kv_cache_free_gpu_memory_fraction
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    kv_cache_dtype: KvDtype = "auto"
    weight_dtype: WeightDtype | None = None
    max_num_batched_tokens: int | None = Field(None, ge=1)
    max_num_seqs: int | None = Field(None, ge=1)
    engine: Engine = "vllm"
    engine_version: str | None = None  # "0.19.1", "0.33"; None: the newest modelled (engines.DEFAULT_ENGINE_VERSION)
    enforce_eager: bool = False  # --enforce-eager: no CUDA graphs
    # --speculative-config with the model's MTP heads: on/off, drafted tokens per step (None: the checkpoint's MTP
    # layers) and their per-position acceptance (None: a published figure, else speculation stays off), or a run's
    # measured mean acceptance length at those drafts (tokens per verify step, the bonus token included)
    speculative: bool = False
    speculative_tokens: int | None = Field(None, ge=1, le=8)
    spec_acceptance: float | None = Field(None, gt=0, lt=1)
    spec_accept_len: float | None = Field(None, ge=1, le=9)
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (None: the release's default)
    profile_cuda_graphs: bool | None = None

    @model_validator(mode="after")
    def _modelled_release(self) -> Settings:
        self.release()  # ValueError when the engine version is not a modelled release
        return self

    def release(self) -> Release:
        """The modelled engine release these settings run on (ValueError if it is not modelled)."""
        return release(self.engine, self.engine_version)

    def utilization(self) -> float:
        """--gpu-memory-utilization, or the release's default (vLLM `config/cache.py`)."""
        return self.gpu_memory_utilization or self.release().gpu_memory_utilization

    def graph_estimate(self) -> bool:
        """Whether the CUDA-graph memory estimate is subtracted from the KV budget."""
        if self.enforce_eager:
            return False
        return self.release().graph_estimate if self.profile_cuda_graphs is None else self.profile_cuda_graphs

    def batched_tokens(self, gpu_bytes: int, gpu_name: str = "") -> int:
        """max_num_batched_tokens: the flag, else the release's default for a device of `gpu_bytes`."""
        return self.max_num_batched_tokens or self._tier(gpu_bytes, gpu_name)[0]

    def num_seqs(self, gpu_bytes: int, gpu_name: str = "") -> int:
        """max_num_seqs: the flag, else the release's default (capped by max_num_batched_tokens, v0.11+)."""
        return self.max_num_seqs or min(self._tier(gpu_bytes, gpu_name)[1], self.batched_tokens(gpu_bytes, gpu_name))

    def _tier(self, gpu_bytes: int, gpu_name: str) -> tuple[int, int]:
        if self.engine == "sglang":  # `server_args.py`: chunked_prefill_size 16384 from 160 GB, else 8192
            return (16384 if gpu_bytes >= 160e9 else 8192), 1024
        if self.engine == "trtllm":  # `llmapi/llm_args.py`, `commands/serve.py`: max_num_tokens, max_batch_size
            return 8192, 2048
        big = self.release().big_tier_gib if self.engine == "vllm" else None
        if big is not None and gpu_bytes >= big * GiB:
            return 16384, 1024
        if gpu_bytes >= BIG_GPU_BYTES and "a100" not in gpu_name.lower():
            return 8192, 1024
        return 2048, 256

    def model_len(self, max_context: int) -> int:
        return self.max_model_len or min(max_context, DEFAULT_MAX_MODEL_LEN)
