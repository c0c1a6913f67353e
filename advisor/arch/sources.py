"""Where a model reference's config can be read: a local path or the Hub (huggingface_hub). The order and
the catalog fallback are `advisor/resolve.py`'s. The Hub is always asked through huggingface_hub (no probe
of our own): a Hub that cannot be reached falls back to huggingface_hub's cache (source `hub-cache:`),
then to the catalog; a Hub that does not answer costs one short metadata timeout (`advisor/arch/hub.py`).
"""

from __future__ import annotations

from pathlib import Path

from advisor.arch.local import read_local
from advisor.arch.model import ModelArch
from advisor.arch.reader import read_config


def from_local(ref: str, path: Path) -> tuple[ModelArch, str]:
    """The architecture of a local folder with config.json or a config file, and its source."""
    data, sidecar, config = read_local(path)
    return read_config(data, name=ref, where=str(config), sidecar=sidecar), f"local:{config}"


def from_hub(repo: str, revision: str | None) -> tuple[ModelArch, str, dict[str, int] | None] | str:
    """(architecture, source, safetensors counts) from the Hub or its HF cache, or why neither could answer."""
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

