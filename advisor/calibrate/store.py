"""Calibration files: fitted efficiency terms per (hardware, engine) with their provenance.

Shipped defaults live in `advisor/calibrations/<hardware>--<engine>.json`. A node without one borrows
the terms of the nearest calibrated profile (same GPU generation, then same interconnect class) and
says so in `calibrated`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from advisor.cost.terms import BOUNDS, Terms
from advisor.engines import MeasuredEngine
from advisor.errors import AdvisorError
from advisor.files import write_atomic
from advisor.hardware import HardwareProfile, known_ids, load_profile

SHIPPED = Path(__file__).resolve().parent.parent / "calibrations"


class Calibration(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    hardware: str
    engine: MeasuredEngine
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


def read_calibration(path: Path) -> Calibration:
    try:
        data = json.loads(path.read_text())
        return Calibration.model_validate(data)
    except FileNotFoundError:
        raise AdvisorError(f"--calibration {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise AdvisorError(f"--calibration {path}: not a calibration file ({type(err).__name__})") from None
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
        raise AdvisorError(f"--calibration {path}: {f'field {where}: ' if where else ''}{msg}") from None


def shipped_path(hardware: str, engine: str) -> Path:
    return SHIPPED / f"{hardware}--{engine}.json"


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
        if shipped_path(hw.id, engine).exists():
            shipped = read_calibration(shipped_path(hw.id, engine))
            doc["replaces"] = f"the shipped {hw.id}/{engine} calibration ({shipped.rows_used} rows)"
        return cal.terms, doc
    own = shipped_path(hw.id, engine)
    if own.exists():
        cal = read_calibration(own)
        return cal.terms, _doc(cal, "shipped")
    donor = _nearest(hw, engine)
    if donor is not None:
        cal = read_calibration(shipped_path(donor, engine))
        doc = _doc(cal, f"borrowed from {donor} (nearest calibrated profile: same GPU generation "
                        f"or interconnect class; no measurements for {hw.id})")
        return cal.terms, {**doc, "borrowed_from": donor, "for_hardware": hw.id}
    return Terms(), {"how": "none: priors (no calibration for this hardware and engine)", "rows": 0}


def _doc(cal: Calibration, how: str) -> dict[str, Any]:
    return {"how": how, "hardware": cal.hardware, "engine": cal.engine, "rows": cal.rows_used,
            "terms": cal.terms.model_dump(), "cv": cal.cv, "tpot_residual_pct": cal.tpot_residual_pct}


def _nearest(hw: HardwareProfile, engine: str) -> str | None:
    best: tuple[int, str] | None = None
    for other in known_ids():
        if other == hw.id or not shipped_path(other, engine).exists():
            continue
        prof = load_profile(other)
        score = 2 * (prof.gpu.generation == hw.gpu.generation) + (prof.interconnect_class == hw.interconnect_class)
        if score and (best is None or score > best[0]):
            best = (score, other)
    return best[1] if best else None


def write_calibration(cal: Calibration, path: Path) -> None:
    """Write atomically (advisor.files): a failure leaves `path` untouched."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise AdvisorError(f"-o {path.parent}: cannot create the folder ({err.strerror or err})") from None
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
    if shipped_path(hw, engine).exists():
        out.append((read_calibration(shipped_path(hw, engine)), f"the shipped {hw}/{engine} calibration"))
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
