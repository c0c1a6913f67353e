"""One resolver for every command: a model reference -> its architecture and where it came from.

Order: a local path (folder with config.json, or a config file); the Hugging Face Hub through
huggingface_hub (HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE and its cache honoured); the bundled catalog.
A checkpoint that is in none of them is refused with the reason, never guessed from its name.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from advisor import catalog
from advisor.arch.hub import is_repo_id
from advisor.arch.model import ModelArch
from advisor.arch.sources import from_hub, from_local, looks_like_path, split_revision
from advisor.errors import AdvisorError, NotFound

MAX_REF_CHARS = 512  # longer than any path or Hub id a user types; beyond it the OS refuses file names


class Resolved(BaseModel):
    model_config = ConfigDict(frozen=True)

    ref: str
    arch: ModelArch
    source: str  # "local:PATH" | "hub:ORG/NAME@REV" | "hub-cache:..." | "catalog:ORG/NAME"
    safetensors_params: dict[str, int] | None = None  # elements per dtype in the repo's weights (Hub only)


def resolve(ref: str) -> Resolved:
    """ModelArch for a reference, with its source; AdvisorError with one line when nothing has it."""
    if not ref.strip():
        raise AdvisorError("model reference is empty")
    if len(ref) > MAX_REF_CHARS:
        raise NotFound(f"model reference of {len(ref)} characters: not a path, Hub id or catalog model")
    path = Path(ref).expanduser()
    if _exists(path):
        arch, source = from_local(ref, path)
        return Resolved(ref=ref, arch=arch, source=source)
    repo, revision = split_revision(ref)
    if "@" in ref and revision is None:
        raise AdvisorError(f"{ref}: nothing after @: give a revision (branch, tag or commit) or drop the @")
    if looks_like_path(ref):
        raise NotFound(f"{ref}: no such file or directory")
    if not is_repo_id(repo):
        entry = catalog.lookup(ref)
        if entry is not None:
            return Resolved(ref=ref, arch=entry.arch, source=f"catalog:{entry.id}")
        raise NotFound(f"{ref}: not a local path, a Hub id ORG/NAME[@REVISION], or a catalog model")
    hub = from_hub(repo, revision)
    if not isinstance(hub, str):
        arch, source, counts = hub
        return Resolved(ref=repo, arch=arch, source=source, safetensors_params=counts)
    entry = catalog.lookup(repo)
    if entry is not None and revision is None:
        return Resolved(ref=ref, arch=entry.arch, source=f"catalog:{entry.id} ({hub})")
    if entry is not None:
        raise NotFound(f"{ref}: {hub}, and the bundled catalog cannot answer for a pinned revision "
                           f"(it holds {entry.config_source}); drop @{revision} to use it")
    raise NotFound(f"{ref}: {hub}, and it is not in the bundled catalog (`advisor inspect` with no model "
                       "lists it)")


def resolve_all(refs: list[str]) -> tuple[list[Resolved], dict[str, AdvisorError]]:
    """Every reference that resolves, and the error of each that does not (`NotFound` when nothing holds it)."""
    found: list[Resolved] = []
    missing: dict[str, AdvisorError] = {}
    for ref in refs:
        try:
            found.append(resolve(ref))
        except AdvisorError as err:
            missing[ref] = err
    return found, missing


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # e.g. a name longer than the file system allows
        return False
