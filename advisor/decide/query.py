"""The question a ranking answers: objective, workload and limits."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.text import plural

Objective = Literal["latency", "throughput", "goodput", "best-under-slo"]
OBJECTIVES: tuple[str, ...] = ("latency", "throughput", "goodput", "best-under-slo")
# Concurrencies every ranking evaluates (and the plot draws), plus the asked one.
GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Query(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    objective: Objective = "latency"
    concurrency: int = Field(64, ge=1)
    input_len: int = Field(1024, ge=1)
    output_len: int = Field(1024, ge=1)
    max_tpot_ms: float | None = Field(None, gt=0)
    max_ttft_ms: float | None = Field(None, gt=0)
    gpu_hour_price: float | None = Field(None, gt=0)  # USD per GPU-hour (no default: a price is the user's)
    quality_scale: str = "LMArena Text Arena score"  # the one scale quality is read on (advisor/quality)
    min_quality: float | None = None  # models below it (or unknown on the scale) are not ranked

    def grid(self) -> tuple[int, ...]:
        return tuple(sorted(set(GRID) | {self.concurrency}))

    def limits(self) -> str:
        """The goodput limits in words, e.g. "TPOT <= 30 ms and TTFT <= 2000 ms" (empty for other objectives)."""
        parts = [f"{name} <= {v:g} ms" for name, v in (("TPOT", self.max_tpot_ms), ("TTFT", self.max_ttft_ms))
                 if v is not None]
        return " and ".join(parts)

    def describe(self) -> str:
        """What the score measures, for table titles."""
        users = plural(self.concurrency, "user")
        return {"latency": "single-user tok/s (load: 1 user)", "throughput": f"total tok/s at {users}",
                "goodput": f"total tok/s within the limits, up to {users}",
                "best-under-slo": f"quality ({self.quality_scale}) among models within {self.limits()} at "
                                  f"{users}"}[self.objective]
