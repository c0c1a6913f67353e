"""Calibration files: fitted step-level terms with their provenance.

Shipped: one pooled fit per engine, `advisor/calibrations/<engine>.json` (`PooledFit`, written by
`scripts/refit_calibrations.py`): engine-wide terms, each measured GPU's terms (its deviation shrunk toward
the engine-wide ones), the held-out errors of the splits a user's question implies (`research/splits.py`), and
the residual spread that makes an interval. A GPU never measured gets the engine-wide terms and its own spec
sheet, and says so. A user's own fit (`advisor calibrate`, a `Calibration` for one hardware and engine) replaces
them with `--calibration FILE`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from advisor.cost.terms import BOUNDS, Terms
from advisor.engines import Engine
from advisor.errors import AdvisorError
from advisor.files import write_atomic
from advisor.hardware import HardwareProfile

SHIPPED = Path(__file__).resolve().parent.parent / "calibrations"


class Calibration(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    hardware: str
    engine: Engine
    terms: Terms
    bounds_hit: list[str] = []
    refused: dict[str, str] = {}
    rows_used: int
    rows_rejected: int = 0
    files: list[str] = []
    engine_versions: list[str] = []
    cv: dict[str, dict[str, float]] = {}
    tpot_residual_pct: tuple[float, float] | None = None
    method: str = ""

    @model_validator(mode="after")
    def _within_bounds(self) -> Calibration:
        """Every term inside the bounds a fit may reach (`advisor.cost.terms.BOUNDS`): a hand-edited 1e12 is not
        a calibration."""
        for name, value in self.terms.model_dump().items():
            lo, hi = BOUNDS[name]
            if not lo <= value <= hi:
                raise ValueError(f"terms.{name} = {value:g} is outside the bounds a fit may reach, [{lo:g}, {hi:g}] "
                                 "(advisor/cost/terms.py BOUNDS)")
        return self


class HardwareFit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    terms: Terms
    rows: int
    deviations: dict[str, float] = {}  # logit shift from the engine-wide value, per term the rows inform
    set_aside: list[str] = []  # rows left out of the fit, and why (`calibrate/consistency.py`)


class PooledFit(BaseModel):
    """One engine's terms fitted across every GPU (`calibrate/pooled.py`) and how well they predict what
    they never saw."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: Engine
    engine_wide: Terms
    hardware: dict[str, HardwareFit]
    refused: dict[str, str] = {}
    bounds_hit: list[str] = []
    files: list[str] = []
    method: str = ""
    # split ("model" / "hardware") -> "hardware/engine" -> metric -> summary of held-out |error|
    splits: dict[str, dict[str, dict[str, Any]]] = {}
    # metric -> (p10, p90) of the signed % errors of leave-one-model-out predictions
    residual_pct: dict[str, tuple[float, float]] = {}
    coverage: dict[str, float] = {}  # metric -> share of held-out rows inside their 80% interval


def read_pooled(engine: str) -> PooledFit | None:
    """The shipped pooled fit of `engine` (None if there is none); one clear error when the file does not match
    this version's terms (e.g. a term renamed since it was written)."""
    path = SHIPPED / f"{engine}.json"
    if not path.exists():
        return None
    try:
        return PooledFit.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise AdvisorError(f"shipped calibration {path}: unreadable ({type(err).__name__})") from None
    except ValidationError as err:
        where, msg, _ = _first_error(err)
        raise AdvisorError(f"shipped calibration {path}: {where or 'file'}: {msg}; it does not match this "
                           "version's terms (regenerate it: python -m scripts.refit_calibrations)") from None


def _first_error(err: ValidationError) -> tuple[str, str, str]:
    """(dotted field, message, pydantic error type) of a validation error's first entry; our own validators'
    message without pydantic's "Value error, " prefix."""
    first = err.errors(include_url=False)[0]
    msg = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
    return ".".join(str(p) for p in first["loc"]), msg, first["type"]


def pooled_terms(hw: HardwareProfile, engine: str) -> tuple[Terms, dict[str, Any]] | None:
    """The shipped pooled terms of `engine` for this GPU, and the `calibrated` field saying which (its own
    shrunk fit, or the engine-wide terms for a GPU with no rows)."""
    fit = read_pooled(engine)
    if fit is None:
        return None
    own = fit.hardware.get(hw.id)
    doc: dict[str, Any] = {"engine": engine, "bounds_hit": fit.bounds_hit, "refused": fit.refused,
                           "residual_pct": fit.residual_pct, "coverage": fit.coverage,
                           "tpot_residual_pct": fit.residual_pct.get("tpot_ms")}
    if own is not None:
        return own.terms, {"how": f"shipped: {engine} terms pooled over {len(fit.hardware)} GPUs, this one's "
                                  "own deviation shrunk toward them", "hardware": hw.id, "rows": own.rows,
                           "terms": own.terms.model_dump(), "cv": fit.splits.get("model", {}).get(
                               f"{hw.id}/{engine}", {}), **doc}
    return fit.engine_wide, {"how": f"engine-wide {engine} terms (pooled over {', '.join(sorted(fit.hardware))}) "
                                    f"with {hw.id}'s own spec sheet: no measurements for {hw.id}",
                             "hardware": hw.id, "rows": 0, "terms": fit.engine_wide.model_dump(),
                             "cv": fit.splits.get("hardware", {}).get("overall", {}), **doc}


def read_calibration(path: Path) -> Calibration:
    try:
        data = json.loads(path.read_text())
        return Calibration.model_validate(data)
    except FileNotFoundError:
        raise AdvisorError(f"--calibration {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise AdvisorError(f"--calibration {path}: not a calibration file ({type(err).__name__})") from None
    except ValidationError as err:
        where, msg, kind = _first_error(err)
        if kind == "extra_forbidden" and where.startswith("terms."):
            msg = "a term this version no longer fits (written by an older advisor): run `advisor calibrate` again"
        raise AdvisorError(f"--calibration {path}: {f'field {where}: ' if where else ''}{msg}") from None


def terms_for(hw: HardwareProfile, engine: str, path: str | None = None) -> tuple[Terms, dict[str, Any]]:
    """Terms to use and the `calibrated` field that says where they came from."""
    if path is not None:
        cal = read_calibration(Path(path))
        if cal.hardware != hw.id:
            raise AdvisorError(f"--calibration {path}: fitted for {cal.hardware}, not {hw.id}")
        if cal.engine != engine:
            raise AdvisorError(f"--calibration {path}: fitted for {cal.engine}, not --engine {engine} (its terms "
                               f"absorb {cal.engine}'s scheduler and kernels)")
        doc = _doc(cal, f"file {path}")
        shipped = pooled_terms(hw, engine)
        if shipped is not None:
            doc["replaces"] = f"the shipped {hw.id}/{engine} calibration ({shipped[1]['rows']} rows)"
        return cal.terms, doc
    pooled = pooled_terms(hw, engine)
    if pooled is not None:
        return pooled
    return Terms(), {"how": "none: priors (no calibration for this engine)", "rows": 0}


def _doc(cal: Calibration, how: str) -> dict[str, Any]:
    return {"how": how, "hardware": cal.hardware, "engine": cal.engine, "rows": cal.rows_used,
            "terms": cal.terms.model_dump(), "cv": cal.cv, "tpot_residual_pct": cal.tpot_residual_pct,
            "bounds_hit": cal.bounds_hit}


def write_calibration(cal: Calibration, path: Path) -> None:
    """Write atomically (advisor.files): a failure leaves `path` untouched; the folder must exist (no command
    creates one)."""
    if not path.parent.is_dir():
        raise AdvisorError(f"-o {path}: folder {path.parent} does not exist")
    write_atomic(path, json.dumps(cal.model_dump(mode="json"), indent=2) + "\n")


def replaced(hw: str, engine: str, output: Path) -> list[tuple[Calibration, str]]:
    """The calibrations a new fit written to `output` would replace, with their names: the file at `output` when
    it is one of the same (hardware, engine), and the shipped one (which `--calibration output` then overrides)."""
    out: list[tuple[Calibration, str]] = []
    try:
        existing = output.is_file()
    except (OSError, ValueError):  # a name the OS refuses: writing it will say so
        existing = False
    if existing:
        try:
            old = read_calibration(output)
        except AdvisorError:
            old = None
        if old is not None and (old.hardware, old.engine) == (hw, engine):
            out.append((old, f"{output} ({hw}/{engine})"))
    return out


def worse_metrics(new_cv: dict[str, dict[str, float]], old_cv: dict[str, dict[str, float]]) -> list[str]:
    """Where the new fit's held-out median |error| is worse than the old one's, metric by metric (the metrics both
    measured), in words; a fit with no held-out error at all cannot show it is not worse."""
    both = [m for m, old in old_cv.items() if old.get("n") and old.get("median_abs_pct") is not None
            and new_cv.get(m, {}).get("median_abs_pct") is not None]
    if not both:
        return ["no held-out error on a metric the old calibration measured (too few rows to cross-validate)"] \
            if any(v.get("n") for v in old_cv.values()) else []
    out = []
    for m in both:
        new, old = new_cv[m], old_cv[m]
        if new["median_abs_pct"] > old["median_abs_pct"]:
            out.append(f"held-out median {m} error {new['median_abs_pct']:g}% (n={int(new['n'])}) vs "
                       f"{old['median_abs_pct']:g}% (n={int(old['n'])})")
    return out
