"""The engine flags a user gives (`Settings`); `cost/engine_args.py: resolve` fills every default from them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from advisor.engines import DEFAULT_ENGINE, DEFAULT_KV_CACHE_DTYPE, Engine, KvDtype, Release, WeightDtype, release


class Settings(BaseModel):
    """Engine flags as the user gave them. None = the engine release's default for this model, plan and GPU,
    filled only by `cost/engine_args.py: resolve`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_model_len: int | None = Field(None, ge=1)
    # vLLM --gpu-memory-utilization; SGLang's --mem-fraction-static; TensorRT-LLM's --kv_cache_free_gpu_memory_fraction
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    kv_cache_dtype: KvDtype = DEFAULT_KV_CACHE_DTYPE
    weight_dtype: WeightDtype | None = None
    max_num_batched_tokens: int | None = Field(None, ge=1)
    max_num_seqs: int | None = Field(None, ge=1)
    engine: Engine = DEFAULT_ENGINE
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
    two_batch_overlap: bool = False  # SGLang --enable-two-batch-overlap (`cost/tbo.py`)
    # the MoE exchange of attention-DP + EP: "default" (the engine's own: all-gather / reduce-scatter inside a fast
    # domain, DeepEP across RDMA nodes), "deepep" (DeepEP all-to-all inside a node or an NVL72 rack too: SGLang
    # --moe-a2a-backend deepep, vLLM --all2all-backend deepep_low_latency; `hardware/a2a_backends.py`)
    moe_a2a_backend: Literal["default", "deepep"] = "default"
    # the requests' top-p (theirs, or the model's generation config that vLLM applies to requests carrying none,
    # `config/model.py: get_diff_sampling_param`); None: greedy or unfiltered. vLLM 0.11-0.16 sort the whole
    # vocabulary for it every step (`engines.Release.sampler` "sort", `cost/step.py: SORT_SAMPLER_S_PER_LOGIT`)
    top_p: float | None = Field(None, gt=0, le=1)

    @model_validator(mode="after")
    def _modelled_release(self) -> Settings:
        self.release()  # ValueError when the engine version is not a modelled release
        if self.two_batch_overlap and self.engine != "sglang":
            raise ValueError(f"two-batch overlap (--enable-two-batch-overlap) is SGLang's; engine {self.engine}")
        if self.moe_a2a_backend != "default" and self.engine == "trtllm":
            raise ValueError("TensorRT-LLM picks its own MoE all-to-all (communication_factory.py: create_strategy); "
                             "moe_a2a_backend is vLLM's and SGLang's")
        return self

    def release(self) -> Release:
        """The modelled engine release these settings run on (ValueError if it is not modelled)."""
        return release(self.engine, self.engine_version)
