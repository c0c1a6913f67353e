"""Glue: (model, plan, settings) -> memory fit + features -> one vectorised evaluation -> results."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.arch.model import ModelArch, WeightGroup
from advisor.cost.features import Features, plan_features
from advisor.cost.memory import MemoryFit, memory_fit
from advisor.cost.plan import Plan, candidate_plans, invalid_reason
from advisor.cost.terms import Terms
from advisor.cost.timing import comm_fn, serve
from advisor.cost.weights import requantize
from advisor.cost.workload import Settings
from advisor.hardware import HardwareProfile


@dataclass(frozen=True)
class Case:
    """One model at one plan: validity, memory, and (when it runs) the features row."""

    arch: ModelArch
    plan: Plan
    weights: tuple[WeightGroup, ...]
    invalid: str | None
    memory: MemoryFit | None

    @property
    def runs(self) -> bool:
        return self.invalid is None and self.memory is not None and self.memory.fits

    @property
    def reason(self) -> str | None:
        return self.invalid or (self.memory.reason if self.memory else None)


def make_case(arch: ModelArch, plan: Plan, hw: HardwareProfile, settings: Settings,
              gpus: int | None = None) -> Case:
    """`gpus`: how many of the node's GPUs may be used (default all)."""
    n = min(gpus or hw.topology.num_gpus, hw.topology.num_gpus)
    weights = requantize(arch, settings.weight_dtype)
    invalid = invalid_reason(arch, plan, n, weights)
    mem = memory_fit(arch, plan, hw, settings, weights) if plan.gpus <= n else None
    return Case(arch=arch, plan=plan, weights=weights, invalid=invalid, memory=mem)


def all_cases(arch: ModelArch, hw: HardwareProfile, settings: Settings, gpus: int | None = None) -> list[Case]:
    n = min(gpus or hw.topology.num_gpus, hw.topology.num_gpus)
    return [make_case(arch, p, hw, settings, n) for p in candidate_plans(arch, n)]


def evaluate(cases: list[Case], hw: HardwareProfile, settings: Settings, terms: Terms,
             concurrency: np.ndarray, input_len: np.ndarray, output_len: np.ndarray) -> dict[str, np.ndarray]:
    """Arrays [P, C, L] for runnable cases x concurrency [C] x lengths [L] (input/output paired), plus the
    per-case features under `feat_<name>` ([P])."""
    rows = []
    for c in cases:
        assert c.memory is not None
        rows.append(plan_features(c.arch, c.plan, hw, settings, c.weights, c.memory))
    flat = Features.stack(rows)
    F = Features(**{k: v[:, None, None] for k, v in vars(flat).items()})
    batched = settings.batched_tokens(hw.gpu.memory_bytes)
    out = serve(F, hw, terms, comm_fn(hw, settings.engine), np.asarray(concurrency, float)[None, :, None],
                np.asarray(input_len, float)[None, None, :], np.asarray(output_len, float)[None, None, :],
                batched)
    out.update({f"feat_{k}": v for k, v in vars(flat).items()})
    return out
