"""Engine settings and workload that a prediction depends on, with vLLM's defaults and sources."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from advisor.engines import DEFAULT_GPU_MEMORY_UTILIZATION, DEFAULT_MAX_MODEL_LEN, Engine, KvDtype, WeightDtype

# vLLM `engine/arg_utils.py:_get_default_max_num_seqs_and_batched_tokens`: the OpenAI
# server on GPUs with >= 70 GiB uses max_num_batched_tokens 8192 and max_num_seqs 1024 (256 / 2048 below).
BIG_GPU_BYTES = 70 * 2**30


class Settings(BaseModel):
    """Engine flags (`vllm serve ...`). None = the engine's default for this model/GPU."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_model_len: int | None = Field(None, ge=1)
    gpu_memory_utilization: float = Field(DEFAULT_GPU_MEMORY_UTILIZATION, gt=0, le=1)
    kv_cache_dtype: KvDtype = "auto"
    weight_dtype: WeightDtype | None = None
    max_num_batched_tokens: int | None = Field(None, ge=1)
    max_num_seqs: int | None = Field(None, ge=1)
    engine: Engine = "vllm"

    def batched_tokens(self, gpu_bytes: int) -> int:
        return self.max_num_batched_tokens or (8192 if gpu_bytes >= BIG_GPU_BYTES else 2048)

    def num_seqs(self, gpu_bytes: int) -> int:
        return self.max_num_seqs or (1024 if gpu_bytes >= BIG_GPU_BYTES else 256)

    def model_len(self, max_context: int) -> int:
        return self.max_model_len or min(max_context, DEFAULT_MAX_MODEL_LEN)

