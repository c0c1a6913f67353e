"""Published quality scores (`quality.csv`, sources in its README) and a user's own evals, looked up per model on
one scale at a time.

- A scale is one benchmark name of the CSV; `DEFAULT_SCALE` covers most of the catalog on one independent
  leaderboard snapshot. Two scales are never mixed in one answer.
- A catalog checkpoint scored under another id (a quantized copy) is declared in `variants.toml`, with the
  caveat shown beside its score; nothing is matched by name.
- Missing is missing: a model with no score on the scale gets None (shown as "unknown"), never an estimate.
- `--quality-file`: CSV with columns model, score and optionally benchmark; it replaces the published scale.
"""

from __future__ import annotations

import csv
import re
import tomllib
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from advisor.errors import AdvisorError

HERE = Path(__file__).resolve().parent
DEFAULT_SCALE = "LMArena Text Arena score"
USER_SCALE = "your evals"
_CI = re.compile(r"95% CI \+-\s*([\d.]+)")


class QualityFact(BaseModel):
    """One published score, as the CSV row gives it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    benchmark: str
    setting: str
    score: float
    unit: str
    source: str
    kind: str  # independent | vendor | user
    date: str
    notes: str

    @property
    def ci95(self) -> float | None:
        """Half-width of the published 95% interval, where the setting states one (LMArena)."""
        m = _CI.search(self.setting)
        return float(m.group(1)) if m else None


class Quality(BaseModel):
    """A model's score on one scale, where it comes from, and what it was measured on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float
    benchmark: str
    ci95: float | None = None
    source: str
    kind: str
    date: str = ""
    measured_on: str  # the model id the score belongs to
    note: str = ""  # a variant's caveat, or the source's own notes


@cache
def facts() -> tuple[QualityFact, ...]:
    with (HERE / "quality.csv").open(newline="", encoding="utf-8") as fh:
        return tuple(QualityFact(model=r["model"], benchmark=r["benchmark"], setting=r["setting"],
                                 score=float(r["score"]), unit=r["unit"], source=r["source_url_or_repo_path"],
                                 kind=r["kind"], date=r["date_if_stated"], notes=r["notes"])
                     for r in csv.DictReader(fh))


@cache
def variants() -> dict[str, tuple[str, str]]:
    """Catalog id -> (scored model id, caveat)."""
    data = tomllib.loads((HERE / "variants.toml").read_text(encoding="utf-8"))
    return {k: (v["scored_as"], v["note"]) for k, v in data["variants"].items()}


def scales() -> dict[str, int]:
    """Benchmark name -> how many models it scores."""
    out: dict[str, int] = {}
    for f in facts():
        out[f.benchmark] = out.get(f.benchmark, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def resolve_scale(name: str | None) -> str:
    """The benchmark a --quality NAME means: exact (case-insensitive), else the one name containing it."""
    if name is None:
        return DEFAULT_SCALE
    known = list(scales())
    exact = [b for b in known if b.lower() == name.lower()]
    if exact:
        return exact[0]
    hits = [b for b in known if name.lower() in b.lower()]
    if len(hits) == 1:
        return hits[0]
    what = f"matches {len(hits)}: {'; '.join(hits)}" if hits else "is not a published scale"
    raise AdvisorError(f"--quality: {name!r} {what} (scales: {'; '.join(known)})")


def for_model(model: str, scale: str) -> list[QualityFact]:
    """Every published score of `model` (or the model it is declared a variant of), all scales."""
    scored = variants().get(model, (model, ""))[0]
    return [f for f in facts() if f.model == scored]


def lookup(model: str, scale: str, user: dict[str, Quality] | None = None) -> Quality | None:
    """`model`'s score on `scale` (or in the user's file, which replaces the published scales); None if none."""
    if user is not None:
        return user.get(model)
    scored, caveat = variants().get(model, (model, ""))
    for f in facts():
        if f.model == scored and f.benchmark == scale:
            note = "; ".join(x for x in (caveat, f.notes) if x)
            return Quality(score=f.score, benchmark=f.benchmark, ci95=f.ci95, source=f.source, kind=f.kind,
                           date=f.date, measured_on=f.model, note=note)
    return None


class _UserRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str
    score: float
    benchmark: str = USER_SCALE


def read_user_file(path: str) -> dict[str, Quality]:
    """A user's evals: CSV with model, score[, benchmark] (one benchmark per file). One line + exit 2 if not."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AdvisorError(f"--quality-file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise AdvisorError(f"--quality-file {path}: cannot read it as UTF-8 text ({type(err).__name__})") from None
    reader = csv.DictReader(text.splitlines())
    missing = {"model", "score"} - set(reader.fieldnames or [])
    if missing:
        raise AdvisorError(f"--quality-file {path}: needs columns model and score "
                           f"(missing: {', '.join(sorted(missing))})")
    out: dict[str, Quality] = {}
    for n, row in enumerate(reader, start=2):
        try:
            r = _UserRow.model_validate({k: v for k, v in row.items() if k and v not in (None, "")})
        except ValidationError as err:
            first = err.errors(include_url=False)[0]
            raise AdvisorError(f"--quality-file {path}: line {n}: {'.'.join(map(str, first['loc']))}: "
                               f"{first['msg']}") from None
        if r.score != r.score or r.score in (float("inf"), float("-inf")):
            raise AdvisorError(f"--quality-file {path}: line {n}: score is not a finite number")
        if r.model in out:
            raise AdvisorError(f"--quality-file {path}: line {n}: {r.model} appears twice")
        out[r.model] = Quality(score=r.score, benchmark=r.benchmark, source=str(p), kind="user", measured_on=r.model)
    if not out:
        raise AdvisorError(f"--quality-file {path}: no rows")
    names = sorted({q.benchmark for q in out.values()})
    if len(names) > 1:
        raise AdvisorError(f"--quality-file {path}: more than one benchmark ({', '.join(names)}): one scale per "
                           "file, scales are never mixed")
    return out
