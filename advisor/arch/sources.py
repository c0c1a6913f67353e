"""Resolve a model reference: a local path, then the Hub (huggingface_hub), then the bundled catalog.

Every result says where it came from. The Hub is tried only when its endpoint answers a
TCP connect within a short timeout, so that an offline laptop falls back to the catalog in
milliseconds instead of huggingface_hub's retry loop (tens of seconds).
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict

from advisor.arch.fields import ConfigError
from advisor.arch.hub import is_repo_id
from advisor.arch.local import read_local
from advisor.arch.model import ModelArch
from advisor.arch.reader import read_config
from advisor.errors import AdvisorError

_PROBE_TIMEOUT_S = 1.5


class Resolved(BaseModel):
    model_config = ConfigDict(frozen=True)

    ref: str
    arch: ModelArch
    source: str  # "local:PATH" | "hub:ORG/NAME@REV" | "hub-cache:..." | "catalog:ORG/NAME"
    safetensors_params: dict[str, int] | None = None  # elements per dtype in the repo's weights (Hub only)


def resolve(ref: str) -> Resolved:
    """ModelArch for a reference, with its source; AdvisorError with one line when nothing has it."""
    path = Path(ref).expanduser()
    if path.exists():
        data, sidecar, config = read_local(path)
        return Resolved(ref=ref, arch=read_config(data, name=ref, where=str(config), sidecar=sidecar),
                        source=f"local:{config}")
    repo, revision = _split_revision(ref)
    if _looks_like_path(ref) or not is_repo_id(repo):
        if _looks_like_path(ref):
            raise ConfigError(f"{ref}: no such file or directory")
        from advisor import catalog

        entry = catalog.lookup(ref)
        if entry is not None:
            return Resolved(ref=ref, arch=entry.arch, source=f"catalog:{entry.id}")
        raise AdvisorError(f"{ref}: not a local path, a Hub id ORG/NAME[@REVISION], or a catalog model")
    hub_reason = _try_hub(repo, revision)
    if isinstance(hub_reason, Resolved):
        return hub_reason
    from advisor import catalog

    entry = catalog.lookup(repo)
    if entry is not None and revision is None:
        return Resolved(ref=ref, arch=entry.arch, source=f"catalog:{entry.id} ({hub_reason})")
    if entry is not None:
        raise AdvisorError(f"{ref}: {hub_reason}, and the bundled catalog cannot answer for a pinned revision "
                           f"(it holds {entry.config_source}); drop @{revision} to use it")
    raise AdvisorError(f"{ref}: {hub_reason}, and it is not in the bundled catalog"
                       f" (`advisor inspect` with no model lists it)")


def _try_hub(repo: str, revision: str | None) -> Resolved | str:
    """A Resolved from the Hub, or the reason the Hub could not answer (the caller falls back)."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    if not offline and not _hub_reachable(os.environ.get("HF_ENDPOINT", "https://huggingface.co")):
        return "the Hub is unreachable"
    from advisor.arch.hub import HubUnavailable, fetch_from_hub

    try:
        files = fetch_from_hub(repo, revision)
    except HubUnavailable as err:
        return str(err).removeprefix(f"{repo}: ")
    arch = read_config(files.config, name=repo, where=f"{repo}/config.json", sidecar=files.quant_sidecar)
    return Resolved(ref=repo, arch=arch, source=files.source, safetensors_params=files.safetensors_params)


def _split_revision(ref: str) -> tuple[str, str | None]:
    if "@" in ref:
        repo, _, rev = ref.partition("@")
        return repo, rev or None
    return ref, None


def _looks_like_path(ref: str) -> bool:
    return ref.startswith((".", "/", "~")) or "\\" in ref or ref.count("/") > 1 or ref.endswith(".json")


@cache
def _hub_reachable(endpoint: str) -> bool:
    url = urlparse(endpoint)
    host = url.hostname
    if not host:
        return False
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False
