"""Where a model reference's config can be read: a local path or the Hub (huggingface_hub). The order and
the catalog fallback are `advisor/resolve.py`'s. The Hub is tried only when its endpoint answers a
TCP connect within a short timeout, so that an offline laptop falls back to the catalog in
milliseconds instead of huggingface_hub's retry loop (tens of seconds).
"""

from __future__ import annotations

import os
import socket
from functools import cache
from pathlib import Path
from urllib.parse import urlparse

from advisor.arch.local import read_local
from advisor.arch.model import ModelArch
from advisor.arch.reader import read_config

_PROBE_TIMEOUT_S = 1.5


def from_local(ref: str, path: Path) -> tuple[ModelArch, str]:
    """The architecture of a local folder with config.json or a config file, and its source."""
    data, sidecar, config = read_local(path)
    return read_config(data, name=ref, where=str(config), sidecar=sidecar), f"local:{config}"


def from_hub(repo: str, revision: str | None) -> tuple[ModelArch, str, dict[str, int] | None] | str:
    """(architecture, source, safetensors counts) from the Hub, or why the Hub could not answer."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    if not offline and not _hub_reachable(os.environ.get("HF_ENDPOINT", "https://huggingface.co")):
        return "the Hub is unreachable"
    from advisor.arch.hub import HubUnavailable, fetch_from_hub

    try:
        files = fetch_from_hub(repo, revision)
    except HubUnavailable as err:
        return str(err).removeprefix(f"{repo}: ")
    arch = read_config(files.config, name=repo, where=f"{repo}/config.json", sidecar=files.quant_sidecar)
    return arch, files.source, files.safetensors_params


def split_revision(ref: str) -> tuple[str, str | None]:
    if "@" in ref:
        repo, _, rev = ref.partition("@")
        return repo, rev or None
    return ref, None


def looks_like_path(ref: str) -> bool:
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
