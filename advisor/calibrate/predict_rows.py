"""Measurement rows -> predictions of the same conditions, for `check` and `calibrate`.

Each row becomes a (model, hardware, plan, settings, lengths) case; rows that cannot be predicted (unknown
model or hardware, a plan the engine cannot run, a model that does not fit) get `predicted=None` and the
reason. Runnable rows are gathered per (hardware, engine) into one `Bucket` of per-row features, so a
prediction for every row of a bucket is one vectorised `advisor.cost.timing.predict` call; `calibrate`
re-runs that call with trial terms. Records are immutable: `with_predictions` returns new ones. The rows are
read into cases and buckets by `predict_table` (`prepare`, `predict_rows`), which builds on this module.

TensorRT-LLM rows are predicted with its own scheduler, plan rules and KV budget, whose start-up profile's
activation and non-torch memory are vLLM's estimates (`TRTLLM_ASSUMPTION`, `cost/budget.py: trtllm_budget`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from advisor.calibrate.measurements import Measurement
from advisor.cost.features import Features, plan_features
from advisor.cost.plan import Plan
from advisor.cost.serving import RunOptions
from advisor.cost.terms import Terms
from advisor.cost.workload import Settings
from advisor.engines import release
from advisor.errors import AdvisorError
from advisor.hardware import HardwareProfile, load_profile

# Lengths assumed when a row does not state them (the case study gives neither): `advisor predict`'s defaults.
DEFAULT_INPUT_LEN = 1024
DEFAULT_OUTPUT_LEN = 1024
METRIC_KEYS = ("ttft_ms", "tpot_ms", "output_tok_s")
TRTLLM_ASSUMPTION = "trtllm: its start-up profile's activation and non-torch memory estimated as vLLM's"


@dataclass(frozen=True)
class RowPrediction:
    """One measurement row with its prediction (None when impossible), reason and assumption notes."""

    row: Measurement
    key: tuple[str, str]  # (hardware id, engine label: the row's engine, vllm when empty)
    input_len: int  # the row's (its benchmark's mean, `predict_table.mean_lengths`), or the default assumed
    output_len: int
    reason: str | None = None
    notes: tuple[str, ...] = ()
    predicted: dict[str, float] | None = None


@dataclass(frozen=True)
class Bucket:
    """Runnable rows of one (hardware, engine): the measured rows, their features [N] and workload [N]."""

    hw: HardwareProfile
    engine: str  # physics engine
    index: list[int]  # positions in `predict_table.prepare`'s RowPrediction list
    rows: Sequence[Measurement]  # the measured rows at those positions
    features: Features
    concurrency: np.ndarray
    input_len: np.ndarray  # the mean lengths the benchmark ran
    output_len: np.ndarray
    fixed_lengths: np.ndarray  # [N] bool: every request ran exactly those lengths (length_ratio 1)
    options: np.ndarray  # [N, len(RunOptions._fields)] the run's scheduling options, in `serving.RunOptions` order


def engine_label(row: Measurement) -> str:
    return row.engine or "vllm"


def run_bucket(b: Bucket, terms: Terms) -> dict[str, np.ndarray]:
    """Predicted ttft_ms, tpot_ms, output_tok_s [N] of a bucket under `terms` (one `serve` call)."""
    from advisor.cost.timing import predict

    out = predict(b.features, b.hw, terms, b.engine, b.concurrency, b.input_len, b.output_len,
                  benchmark=True, fixed_lengths=b.fixed_lengths, options=RunOptions(*b.options.T))
    n = len(b.index)
    return {"ttft_ms": np.broadcast_to(out["ttft_s"], (n,)) * 1e3,
            "tpot_ms": np.broadcast_to(out["tpot_s"], (n,)) * 1e3,
            "output_tok_s": np.broadcast_to(out["output_tok_s"], (n,)).astype(float)}


class _Cache:
    """Resolved models, hardware profiles and per-case feature rows, each computed once."""

    def __init__(self) -> None:
        self.models: dict[str, Any] = {}
        self.hws: dict[str, HardwareProfile | str] = {}
        self.feats: dict[tuple[Any, ...], dict[str, object] | str] = {}

    def arch(self, ref: str) -> Any:
        if ref not in self.models:
            self.models[ref] = _resolve(ref)
        return self.models[ref]

    def hw(self, ref: str) -> HardwareProfile | str:
        if ref not in self.hws:
            try:
                self.hws[ref] = load_profile(ref)
            except AdvisorError as err:
                self.hws[ref] = f"unknown hardware: {err}"
        return self.hws[ref]


def _resolve(ref: str) -> Any:
    """The row's model through the one resolver every command uses (local path, Hub, catalog), or the reason."""
    from advisor.resolve import resolve

    try:
        return resolve(ref).arch
    except AdvisorError as err:
        return f"unknown model: {err}"


def requantized_kv_dtype(row_weights: str | None, own_weights: str) -> Literal["auto", "fp8"]:
    """The KV cache a measured row ran: a row that names a model with other weights ran a re-quantized
    checkpoint, and an FP8 / NVFP4 one is a ModelOpt export, whose KV scheme is FP8 unless asked otherwise
    (NVIDIA TensorRT-Model-Optimizer `examples/llm_ptq/hf_ptq.py`: `--kv_cache_qformat` default fp8; the
    exports nvidia/Llama-3.1-70B-Instruct-FP8, nvidia/MiniMax-M2.5-NVFP4 and nvidia/Kimi-K2.5-NVFP4 declare
    it). The engines size the cache by the checkpoint's scheme under `--kv-cache-dtype auto` (vLLM
    `vllm/utils/torch_utils.py: resolve_kv_cache_dtype_string`, vLLM issue #34752; TensorRT-LLM's KV dtype
    "auto" reads `kv_cache_quant_algo`). Otherwise the checkpoint's own ("auto")."""
    return "fp8" if row_weights in ("fp8", "nvfp4") and row_weights != own_weights else "auto"


def _speculation_reason(row: Measurement, arch: Any) -> str | None:
    """Why a row measured with speculative decoding is not predicted, or None. Its tokens per step are the run's
    acceptance length (`spec_accept_len`): without it nothing says them, and a published acceptance
    (`cost/speculative.py`) holds for the prompts it was measured on, not a benchmark's synthetic ones (with
    Qwen3.5's, SPEED-Bench coding, AL 3.39 at 3 drafts, its 30 random-prompt InferenceX rows come out 23-53% too
    fast, model held out). The draft is costed as the checkpoint's own MTP layer, so a separate draft model (a
    checkpoint without MTP layers) is not modelled."""
    drafted = row.spec_tokens
    if drafted <= 0:
        return None
    what = f"measured with speculative decoding ({drafted} drafted token{'s' if drafted > 1 else ''} per step)"
    if not arch.mtp_layers:
        return f"{what} by a separate draft model: only the checkpoint's own MTP layers are modelled as drafter"
    if row.spec_accept_len is None:
        return (f"{what}; the run's acceptance length is not recorded (spec_accept_len; a published one holds "
                "only for its own prompts)")
    return None


def _modelled_version(engine: str, version: str | None) -> str | None:
    """The row's release where it is a modelled one, else None (the default release)."""
    if not version:
        return None
    try:
        release(engine, version)
    except ValueError:
        return None
    return version


def _case_features(cache: _Cache, arch: Any, hw: HardwareProfile, row: Measurement, engine: str,
                   inp: int, out: int) -> dict[str, object] | str:
    """plan_features of the row's case, or why it cannot run (cached per distinct case)."""
    key = (row.model, hw.id, row.tp, row.pp, row.dp, row.ep, row.spec_tokens, row.spec_accept_len,
           row.kv_cache_dtype, row.weight_dtype, row.mem_fraction, row.top_p, row.engine_version, engine, inp, out)
    if key in cache.feats:
        return cache.feats[key]
    from advisor.cost.sweep import make_case

    result: dict[str, object] | str
    if inp + out > arch.max_context:
        result = f"{inp}+{out} tokens exceed the model's context of {arch.max_context}"
    elif (speculation := _speculation_reason(row, arch)) is not None:
        result = speculation
    else:
        settings = Settings(weight_dtype=row.weight_dtype, engine=engine,
                            kv_cache_dtype=row.kv_cache_dtype or requantized_kv_dtype(row.weight_dtype,
                                                                                      arch.weight_dtype),
                            max_model_len=inp + out,  # the run needed at least this
                            gpu_memory_utilization=row.mem_fraction, top_p=row.top_p,
                            engine_version=_modelled_version(engine, row.engine_version),
                            # the run's own drafts and acceptance (`_speculation_reason` left only those)
                            speculative=row.spec_tokens > 0, speculative_tokens=row.spec_tokens or None,
                            spec_accept_len=row.spec_accept_len)
        try:
            case = make_case(arch, Plan(tp=row.tp, pp=row.pp, dp=row.dp, ep=row.ep), hw, settings)
        except (AdvisorError, ValueError) as err:
            case, result = None, f"cannot build the case: {err}"
        if case is not None and not case.runs:
            result = f"plan {case.plan.label()} cannot run: {case.reason}"
        elif case is not None:
            assert case.memory is not None
            result = plan_features(arch, case.plan, hw, case.args, case.weights, case.memory)
    cache.feats[key] = result
    return result


def assumptions(no_input: bool, no_output: bool, trtllm: bool) -> tuple[str, ...]:
    """What a prediction of a row assumes: the lengths it does not state, vLLM's memory estimates inside
    TensorRT-LLM's KV budget."""
    notes = ((no_input, f"input_len unknown: assumed {DEFAULT_INPUT_LEN}"),
             (no_output, f"output_len unknown: assumed {DEFAULT_OUTPUT_LEN}"),
             (trtllm, TRTLLM_ASSUMPTION))
    return tuple(text for applies, text in notes if applies)


def _row_features(cache: _Cache, row: Measurement, inp: int, out: int) -> dict[str, object] | str:
    """The row's plan features, or why it cannot be predicted."""
    found, hw = cache.arch(row.model), cache.hw(row.hardware)
    if isinstance(found, str):
        return found
    if isinstance(hw, str):
        return hw
    return _case_features(cache, found, hw, row, engine_label(row), inp, out)


def with_predictions(preds: list[RowPrediction], buckets: Mapping[tuple[str, str], Bucket],
                     terms_by_key: Mapping[tuple[str, str], Terms]) -> list[RowPrediction]:
    """New records: `preds` with each bucket's rows predicted under its terms (Terms() priors when the key has
    none); the inputs are left as they were."""
    out = list(preds)
    for key, b in buckets.items():
        res = run_bucket(b, terms_by_key.get(key, Terms()))
        for j, i in enumerate(b.index):
            vals = {m: float(res[m][j]) for m in METRIC_KEYS}
            if all(np.isfinite(v) and v > 0 for v in vals.values()):
                out[i] = replace(preds[i], predicted=vals)
            else:
                out[i] = replace(preds[i], reason="the cost model returned a non-finite value")
    return out


def error_pct(pred: RowPrediction) -> dict[str, float | None]:
    """Signed 100 * (predicted - measured) / measured per metric; None where either side is missing."""
    out: dict[str, float | None] = {}
    for m in METRIC_KEYS:
        meas = getattr(pred.row, m)
        out[m] = None if pred.predicted is None or meas is None else 100 * (pred.predicted[m] - meas) / meas
    return out
