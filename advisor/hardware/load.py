"""Find, read and validate hardware profiles; every failure is one AdvisorError line naming file and field."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from advisor.errors import AdvisorError
from advisor.hardware.ids import DEFAULT_HW  # noqa: F401  (re-exported)
from advisor.hardware.schema import HardwareProfile


def profiles_dir() -> Path:
    """Shipped profiles: `advisor/hwprofiles` in a wheel, `hwprofiles/` at the repo root in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for cand in (here / "hwprofiles", here.parent / "hwprofiles"):
        if cand.is_dir():
            return cand
    raise AdvisorError(f"hardware profiles directory not found (looked in {here / 'hwprofiles'})")


def known_ids() -> list[str]:
    """Ids of the shipped profiles (file stems), sorted."""
    return sorted(p.stem for p in profiles_dir().glob("*.toml"))


def _is_file(path: Path) -> bool:
    """`path.is_file()`, False where the OS refuses the name (too long, a NUL byte) instead of raising."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _looks_like_path(ref: str) -> bool:
    return ref.endswith(".toml") or "/" in ref or "\\" in ref or _is_file(Path(ref))


def _short(ref: str) -> str:
    return ref if len(ref) <= 80 else f"{ref[:60]}... ({len(ref)} characters)"


def resolve_profile_path(ref: str) -> Path:
    """Map an id or a path to a profile file; unknown ids list the known ones."""
    if _looks_like_path(ref):
        path = Path(ref).expanduser()
        if not _is_file(path):
            raise AdvisorError(f"--hw {_short(ref)}: no such profile file")
        return path
    path = profiles_dir() / f"{ref}.toml"
    if not _is_file(path):
        raise AdvisorError(f"unknown hardware id {_short(ref)!r}; known ids: {', '.join(known_ids())}")
    return path


def _field_error(path: Path, err: ValidationError) -> AdvisorError:
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"]) or "(top level)"
    kind = first["type"]
    msg = "missing" if kind == "missing" else "unknown field" if kind == "extra_forbidden" else first["msg"]
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return AdvisorError(f"{path}: field {loc}: {msg}{more}")


def parse_profile(path: Path) -> HardwareProfile:
    """Read and validate one TOML file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise AdvisorError(f"{path}: not a text file") from None
    except tomllib.TOMLDecodeError as err:
        raise AdvisorError(f"{path}: not valid TOML ({err})") from None
    except RecursionError:
        raise AdvisorError(f"{path}: TOML nested too deeply") from None
    except OSError as err:
        raise AdvisorError(f"{path}: cannot read ({err.strerror})") from None
    try:
        return HardwareProfile.model_validate(data)
    except ValidationError as err:
        raise _field_error(path, err) from None


@lru_cache(maxsize=64)
def _load_cached(path: str, mtime_ns: int) -> HardwareProfile:
    return parse_profile(Path(path))


def load_profile(ref: str | Path = DEFAULT_HW) -> HardwareProfile:
    """Load a profile by id (`rtx-pro-6000-server`) or by path to a .toml file."""
    path = resolve_profile_path(str(ref))
    return _load_cached(str(path.resolve()), path.stat().st_mtime_ns)
