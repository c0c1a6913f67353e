"""What the per-GPU calibrator (`calibrate/fit.py: Calibrator`, one (hardware, engine) bucket) and the pooled one
(`calibrate/pooled.py: PooledCalibrator`, one engine across every GPU) share, stated once.

- Rows: a fit learns from a bucket without the rows of sweeps that contradict themselves or that need more than
  their GPUs' peak (`consistent`, `calibrate/consistency.py`).
- Residuals: log(predicted / measured) of ttft_ms, tpot_ms and output_tok_s over the rows that measured them, the
  prediction clipped to PRED_CLIP first; a residual that is still not finite (trial terms under which the model
  breaks) counts NONFINITE_RESIDUAL (~e^30 off), so that the solver backs away from it. Then one soft-prior
  residual per fitted term, weighted `prior_weight` (PRIOR_WEIGHT: one prior residual ~ a 30% error on one
  measured value; design choice, issue 6); each calibrator states its prior's space.
- Solver: `scipy.optimize.least_squares`, trf, diff_step DIFF_STEP, at most MAX_NFEV evaluations, the robust loss
  of `calibrate/loss.py` (Cauchy, tighter on TTFT).
- Which rows inform which term (`informs`, `ROW_KINDS`): rows with TPOT or tok/s move the bandwidth scale and the
  per-layer and per-step times; those at TP x DP > 1 the collective scale; rows with TTFT the per-request time;
  rows with TTFT at more than one user the benchmark's wave share (one user arrives alone). A term with fewer than
  `min_rows` such rows keeps its prior, and the per-layer time also when every decode row has the same layer
  count (`layers_must_differ`: it cannot be told from the per-step time then).

The two calibrators differ from these defaults where their fits always did (explicit class attributes, so that the
shipped calibrations do not change): the per-GPU one fits the bandwidth scale from 2 rows; the pooled one counts
every TTFT row for the wave share and does not ask for two layer counts (its deviations are shrunk toward the
engine-wide terms instead).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from functools import cache
from typing import Any, ClassVar, NoReturn

import numpy as np

from advisor.calibrate.consistency import beyond_peak, inconsistent
from advisor.calibrate.loss import F_SCALE, heavy_tailed, robust_loss
from advisor.calibrate.measurements import Measurement
from advisor.calibrate.predict_rows import METRIC_KEYS, Bucket
from advisor.cost.features import Features
from advisor.cost.terms import BOUNDS

NAMES = tuple(BOUNDS)
PRIOR_WEIGHT = 0.3  # one prior residual ~ a 30% error on one measured value; design choice (issue 6)
PRED_CLIP = (1e-9, 1e12)  # a prediction's range before the log (ms or tok/s): keeps log() finite
NONFINITE_RESIDUAL = 30.0  # what a residual that is not finite counts (~e^30 off)
DIFF_STEP = 1e-3  # least_squares' relative finite-difference step
MAX_NFEV = 200  # least_squares' evaluation budget


def _decode(r: Measurement) -> bool:
    return bool(r.tpot_ms or r.output_tok_s)


# Row kind -> (how a refusal names it, which rows).
ROW_KINDS: dict[str, tuple[str, Callable[[Measurement], bool]]] = {
    "decode": ("rows with TPOT or tok/s", _decode),
    "multi_gpu_decode": ("rows with TP x DP > 1 and TPOT or tok/s", lambda r: _decode(r) and r.tp * r.dp > 1),
    "ttft": ("rows with TTFT", lambda r: bool(r.ttft_ms)),
    "ttft_many_users": ("rows with TTFT at concurrency > 1", lambda r: bool(r.ttft_ms) and r.concurrency > 1),
}


class CalibratorBase:
    """The shared part of the calibrators (module docstring); a subclass implements `fit` and sets the attributes
    ending in `_`, and overrides a class attribute below where its fit differs."""

    prior_weight: ClassVar[float] = PRIOR_WEIGHT
    informs: ClassVar[Mapping[str, str]] = {
        "bw_scale": "decode", "layer_overhead_us": "decode", "step_overhead_us": "decode",
        "comm_latency_scale": "multi_gpu_decode", "request_overhead_us": "ttft",
        "bench_wave_share": "ttft_many_users"}
    min_rows: ClassVar[Mapping[str, int]] = dict.fromkeys(NAMES, 3)
    layers_must_differ: ClassVar[bool] = True
    fit_argument: ClassVar[str] = "bucket"  # what `fit` takes, for the message of a learned attribute read early

    @classmethod
    def refusals(cls, b: Bucket) -> dict[str, str]:
        """Terms the bucket's rows cannot inform, with the reason (they keep their prior)."""
        out = {}
        for k in NAMES:
            what, rows = ROW_KINDS[cls.informs[k]]
            n = sum(1 for r in b.rows if rows(r))
            if n < cls.min_rows[k]:
                out[k] = f"only {n} {what if n != 1 else what.replace('rows', 'row', 1)} (need {cls.min_rows[k]}); " \
                         "kept at prior"
        if cls.layers_must_differ and "layer_overhead_us" not in out:
            moved = ROW_KINDS[cls.informs["layer_overhead_us"]][1]
            if len(set(b.features.layers[np.array([moved(r) for r in b.rows], bool)])) < 2:
                out["layer_overhead_us"] = "all decode rows have the same layer count (cannot separate it from the " \
                                           "per-step overhead); kept at prior"
        return out

    @classmethod
    def informed(cls, b: Bucket) -> list[str]:
        """The terms the bucket's rows can inform, in `NAMES` order."""
        refused = cls.refusals(b)
        return [k for k in NAMES if k not in refused]

    @staticmethod
    def log_ratios(pred: Mapping[str, np.ndarray], meas: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """log(predicted / measured) per metric of METRIC_KEYS over its measured rows, the prediction in PRED_CLIP."""
        out = []
        for m in METRIC_KEYS:
            ok = np.isfinite(meas[m])
            out.append(np.log(np.clip(pred[m][ok], *PRED_CLIP) / meas[m][ok]))
        return out

    @staticmethod
    def finite(parts: Sequence[np.ndarray]) -> np.ndarray:
        """The residual vector, NONFINITE_RESIDUAL where a part is not finite."""
        r = np.concatenate(parts)
        return np.where(np.isfinite(r), r, NONFINITE_RESIDUAL)

    @staticmethod
    def solve(residuals: Callable[[np.ndarray], np.ndarray], x0: np.ndarray,
              measured: Sequence[dict[str, np.ndarray]], priors: int, **options: Any) -> np.ndarray:
        """`least_squares` with the shared settings; `measured` and `priors` lay out the residuals for the loss
        (`calibrate/loss.py: heavy_tailed`), `options` add e.g. bounds or the Jacobian's sparsity."""
        from scipy.optimize import least_squares

        loss = robust_loss(heavy_tailed(measured, priors))
        sol = least_squares(residuals, x0, method="trf", loss=loss, f_scale=F_SCALE, diff_step=DIFF_STEP,
                            max_nfev=MAX_NFEV, **options)
        return np.asarray(sol.x)

    def __getattr__(self, name: str) -> NoReturn:
        # only reached when normal lookup fails: a learned attribute before fit(), or a typo
        cls = type(self).__name__
        if name.endswith("_") and not name.startswith("_"):
            raise AttributeError(f"{cls}.{name} does not exist before fit({self.fit_argument}): call fit first")
        raise AttributeError(f"'{cls}' object has no attribute {name!r}")


def measured(b: Bucket) -> dict[str, np.ndarray]:
    """Measured values [N] per metric of a bucket's rows (nan where not measured)."""
    return {m: np.array([getattr(r, m) or np.nan for r in b.rows], float) for m in METRIC_KEYS}


def subset(b: Bucket, keep: np.ndarray) -> Bucket:
    """The bucket restricted to positions `keep` (bool or int index)."""
    pos = np.arange(len(b.index))[keep]
    feats = Features(**{f.name: getattr(b.features, f.name)[pos] for f in fields(Features)})
    return replace(b, index=[b.index[j] for j in pos], rows=[b.rows[j] for j in pos], features=feats,
                   concurrency=b.concurrency[pos], input_len=b.input_len[pos], output_len=b.output_len[pos],
                   fixed_lengths=b.fixed_lengths[pos], options=b.options[pos])


def consistent(b: Bucket) -> tuple[Bucket, dict[int, str]]:
    """The bucket without the rows of sweeps that contradict themselves and the rows that need more than their
    GPUs' peak (`calibrate/consistency.py`), and those rows (positions in the bucket) with the reason; what a fit
    learns from."""
    bad = {**beyond_peak(b.rows, b.features, b.hw, b.input_len, b.output_len), **inconsistent(b.rows)}
    return (subset(b, np.array([j not in bad for j in range(len(b.rows))], bool)) if bad else b), bad


@cache
def architecture_of(model: str) -> str:
    """What "a model the fit never saw" holds out, and what runs on two GPUs compare: models whose architectures
    differ only in name (DeepSeek-R1 and DeepSeek-V3, whose measured rows repeat one another's runs) are one."""
    from advisor.resolve import resolve

    return json.dumps(resolve(model).arch.model_dump(mode="json", exclude={"model"}), sort_keys=True)
