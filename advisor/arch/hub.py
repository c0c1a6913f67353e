"""Hugging Face Hub source of the model reader: config.json, ModelOpt sidecar, safetensors parameter counts.

Everything goes through huggingface_hub (imported inside the functions, never at module top). The
environment is read at call time, not at huggingface_hub import time: HF_ENDPOINT, HF_TOKEN, HF_HOME /
HF_HUB_CACHE, HF_HUB_OFFLINE and HF_HUB_ETAG_TIMEOUT are turned into explicit arguments (endpoint=, token=,
cache_dir=, timeout=/etag_timeout=) because huggingface_hub.constants freezes them when it is first imported.

A Hub that cannot be reached (refused, no route, no DNS, dropped, 5xx) falls back to what huggingface_hub
cached (`try_to_load_from_cache`, source `hub-cache:`). A Hub that accepts connections but does not answer
costs one metadata timeout (3 s unless HF_HUB_ETAG_TIMEOUT says otherwise), prints one warning line, and
is not asked again in the same process.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from advisor.arch.fields import json_type
from advisor.errors import AdvisorError

# huggingface_hub/constants.py: _HF_DEFAULT_ENDPOINT
DEFAULT_ENDPOINT = "https://huggingface.co"
CONFIG_FILE = "config.json"
QUANT_SIDECAR_FILE = "hf_quant_config.json"  # written by NVIDIA ModelOpt exports
SAFETENSORS_SINGLE = "model.safetensors"  # huggingface_hub/constants.py: SAFETENSORS_SINGLE_FILE
SAFETENSORS_INDEX = "model.safetensors.index.json"  # huggingface_hub/constants.py: SAFETENSORS_INDEX_FILE
# Seconds to wait for a metadata answer (/api/models, the HEAD before each file download). huggingface_hub's
# knob for this wait is HF_HUB_ETAG_TIMEOUT (constants.py; default DEFAULT_ETAG_TIMEOUT = 10 s; its docs:
# "if the request times out, huggingface_hub will default to the locally cached files"). advisor's own default
# is shorter, a choice (not a measurement) so that a silent Hub costs 3 s rather than 10 s; the user's
# HF_HUB_ETAG_TIMEOUT, when set, wins as it does in huggingface_hub.
METADATA_TIMEOUT_S = 3

# One name: starts with an ASCII letter/digit, then letters, digits, '.', '_', '-' (the characters the Hub
# allows, huggingface_hub/utils/_validators.py REPO_ID_REGEX, restricted to ASCII); max 96 characters.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"{_NAME}/{_NAME}")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,254}")
_TRUE = {"1", "on", "yes", "true"}  # huggingface_hub/constants.py ENV_VARS_TRUE_VALUES


class HubUnavailable(AdvisorError):
    """The Hub cannot be reached (offline, no network, server error) and the repo is not in the HF cache."""


class HubFiles(BaseModel):
    """What the Hub (or its local cache) holds for one repo revision, parsed but not interpreted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo_id: str
    revision: str | None
    config: dict[str, Any]
    quant_sidecar: dict[str, Any] | None
    safetensors_params: dict[str, int] | None
    source: str


class _HubEnv(NamedTuple):
    endpoint: str
    token: str | None
    cache_dir: str
    offline: bool
    timeout: int  # seconds, for model_info(timeout=) and hf_hub_download(etag_timeout=)


# Endpoints that let a metadata request time out in this process: not asked again (one wait, one warning).
_SILENT_ENDPOINTS: set[str] = set()


def is_repo_id(repo_id: str) -> bool:
    """ORG/NAME in the Hub's character set (no '..', '--', '\\', leading '/', '.git')."""
    return (
        isinstance(repo_id, str)
        and _REPO_ID.fullmatch(repo_id) is not None
        and ".." not in repo_id
        and "--" not in repo_id
        and not repo_id.endswith(".git")
    )


def validate_repo_id(repo_id: str) -> None:
    """Reject anything but ORG/NAME (see `is_repo_id`)."""
    if not is_repo_id(repo_id):
        raise AdvisorError(
            f"model reference {repo_id!r}: a Hub repo id must be ORG/NAME (letters, digits, . _ -)"
        )


def validate_revision(revision: str) -> None:
    """A branch, tag or commit: letters, digits, . _ - / with no '..', '//' or trailing '/'."""
    ok = (
        _REVISION.fullmatch(revision) is not None
        and ".." not in revision
        and "//" not in revision
        and not revision.endswith("/")
    )
    if not ok:
        raise AdvisorError(
            f"revision {revision!r}: must be a branch, tag or commit (letters, digits, . _ - /)"
        )


def _hub_env() -> _HubEnv:
    """HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE/HF_HOME, HF_HUB_OFFLINE, HF_HUB_ETAG_TIMEOUT as set now (rules of
    hf constants.py)."""
    timeout = _etag_timeout()  # before the import: huggingface_hub's own int() of it would raise a traceback
    from huggingface_hub import constants

    endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    home = os.environ.get("HF_HOME") or os.path.join(xdg, "huggingface")
    cache = (
        os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    )
    offline_env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    offline = offline_env.strip().lower() in _TRUE or constants.is_offline_mode()
    return _HubEnv(endpoint, token, os.path.expanduser(os.path.expandvars(cache)), offline, timeout)


def _etag_timeout() -> int:
    """HF_HUB_ETAG_TIMEOUT in whole seconds (hf constants.py: int(value) or the default), else METADATA_TIMEOUT_S."""
    raw = os.environ.get("HF_HUB_ETAG_TIMEOUT", "").strip()
    try:
        seconds = int(raw) if raw else 0
    except ValueError:
        raise AdvisorError(f"HF_HUB_ETAG_TIMEOUT={raw!r}: must be a whole number of seconds") from None
    if seconds < 0:
        raise AdvisorError(f"HF_HUB_ETAG_TIMEOUT={raw!r}: must be a whole number of seconds")
    return seconds or METADATA_TIMEOUT_S


def fetch_from_hub(repo_id: str, revision: str | None = None) -> HubFiles:
    """config.json (+ hf_quant_config.json, safetensors dtype counts) of ORG/NAME[@REVISION] from the Hub."""
    validate_repo_id(repo_id)
    if revision is not None:
        validate_revision(revision)
    env = _hub_env()
    if env.offline or env.endpoint in _SILENT_ENDPOINTS:
        cached = _from_cache(repo_id, revision, env)
        if cached is not None:
            return cached
        why = "HF_HUB_OFFLINE is set" if env.offline else f"the Hub at {env.endpoint} did not answer earlier"
        raise HubUnavailable(f"{repo_id}: {why} and the repo is not in the HF cache at {env.cache_dir}")
    import httpx2

    try:
        return _from_hub(repo_id, revision, env)
    except (OSError, httpx2.HTTPError) as err:
        if isinstance(err, httpx2.TimeoutException):
            _warn_silent(env)
        mapped = _map_error(err, repo_id, revision, env)
    if isinstance(mapped, HubUnavailable):
        cached = _from_cache(repo_id, revision, env)
        if cached is not None:
            return cached
    raise mapped


def _from_hub(repo_id: str, revision: str | None, env: _HubEnv) -> HubFiles:
    """Online: model_info (fails fast, lists files), then config.json (pins the commit), then extras."""
    from huggingface_hub import HfApi

    api = HfApi(endpoint=env.endpoint, token=env.token)
    info = api.model_info(repo_id, revision=revision, timeout=env.timeout)
    files = {s.rfilename for s in info.siblings or []}
    config_path = _download(repo_id, CONFIG_FILE, revision or "main", env)
    # The pointer path is <cache>/models--ORG--NAME/snapshots/<sha>/config.json.
    sha = Path(config_path).parent.name
    config = _read_json(config_path, CONFIG_FILE, repo_id, sha)
    sidecar = _optional_sidecar(repo_id, sha, env) if QUANT_SIDECAR_FILE in files else None
    params = _safetensors_params(api, repo_id, sha, files, env)
    return HubFiles(
        repo_id=repo_id,
        revision=sha,
        config=config,
        quant_sidecar=sidecar,
        safetensors_params=params,
        source=f"hub:{repo_id}@{sha}",
    )


def _download(repo_id: str, filename: str, revision: str, env: _HubEnv) -> str:
    """hf_hub_download into the call-time cache (writes a unique .incomplete file, renames it when whole)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils.tqdm import silent_tqdm

    return hf_hub_download(
        repo_id,
        filename,
        revision=revision,
        cache_dir=env.cache_dir,
        endpoint=env.endpoint,
        token=env.token,
        etag_timeout=env.timeout,
        tqdm_class=silent_tqdm,  # no progress bars: stderr stays for the one-line error
    )


def _warn_silent(env: _HubEnv) -> None:
    """One stderr line the first time an endpoint lets a request time out; later fetches skip it."""
    if env.endpoint in _SILENT_ENDPOINTS:
        return
    _SILENT_ENDPOINTS.add(env.endpoint)
    print(
        f"advisor: warning: the Hub at {env.endpoint} did not answer within {env.timeout} s; using the HF cache "
        "or the bundled catalog (HF_HUB_OFFLINE=1 skips the Hub, HF_HUB_ETAG_TIMEOUT=SECONDS waits longer)",
        file=sys.stderr,
    )


def _optional_sidecar(repo_id: str, sha: str, env: _HubEnv) -> dict[str, Any] | None:
    """hf_quant_config.json when the repo lists it; a 404 on it means there is none."""
    from huggingface_hub.errors import RemoteEntryNotFoundError

    try:
        path = _download(repo_id, QUANT_SIDECAR_FILE, sha, env)
    except RemoteEntryNotFoundError:
        return None
    return _read_json(path, QUANT_SIDECAR_FILE, repo_id, sha)


def _from_cache(repo_id: str, revision: str | None, env: _HubEnv) -> HubFiles | None:
    """Offline path: the files huggingface_hub already cached for this revision (no safetensors headers)."""
    from huggingface_hub import try_to_load_from_cache

    config_path = try_to_load_from_cache(repo_id, CONFIG_FILE, cache_dir=env.cache_dir, revision=revision)
    if not isinstance(config_path, str):
        return None
    sha = Path(config_path).parent.name
    sidecar_path = try_to_load_from_cache(repo_id, QUANT_SIDECAR_FILE, cache_dir=env.cache_dir, revision=sha)
    sidecar = (
        _read_json(sidecar_path, QUANT_SIDECAR_FILE, repo_id, sha) if isinstance(sidecar_path, str) else None
    )
    return HubFiles(
        repo_id=repo_id,
        revision=sha,
        config=_read_json(config_path, CONFIG_FILE, repo_id, sha),
        quant_sidecar=sidecar,
        safetensors_params=None,
        source=f"hub-cache:{repo_id}@{sha}",
    )


def _read_json(path: str, filename: str, repo_id: str, sha: str) -> dict[str, Any]:
    """json.loads of a downloaded file (data only: auto_map and other code references are never acted on)."""
    try:
        doc = json.loads(Path(path).read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise AdvisorError(f"{filename} of {repo_id}@{sha}: not UTF-8 text ({err.reason})") from None
    except json.JSONDecodeError as err:
        raise AdvisorError(
            f"{filename} of {repo_id}@{sha}: not valid JSON ({err.msg}, line {err.lineno} col {err.colno})"
        ) from None
    if not isinstance(doc, dict):
        raise AdvisorError(f"{filename} of {repo_id}@{sha}: expected a JSON object, got a JSON {json_type(doc)}")
    return doc


def _safetensors_params(api: Any, repo_id: str, sha: str, files: set[str], env: _HubEnv) -> dict[str, int] | None:
    """Parameter count per dtype summed over the shard headers (HfApi.get_safetensors_metadata: the index or
    the single file, then ranged GETs of each header); None without usable metadata, whatever the failure."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, NotASafetensorsRepoError, SafetensorsParsingError
    from huggingface_hub.utils import disable_progress_bars

    if SAFETENSORS_SINGLE not in files and SAFETENSORS_INDEX not in files:
        return None  # model_info listed the files: spare the HEAD requests
    try:
        # No "Parse safetensors files" bar on stderr. The index is cached where huggingface_hub's import-time
        # HF_HOME says (get_safetensors_metadata takes no cache_dir): the same place unless HF_HOME changed since.
        with disable_progress_bars():
            meta = api.get_safetensors_metadata(repo_id, revision=sha, token=env.token)
        counts = {str(dtype): int(n) for dtype, n in meta.parameter_count.items()}
    except (HfHubHTTPError, NotASafetensorsRepoError, SafetensorsParsingError, httpx2.HTTPError, OSError, ValueError,
            LookupError, TypeError, AttributeError):  # the last two: an index that is not {"weight_map": {...}}
        return None
    return dict(sorted(counts.items())) or None


def _map_error(err: Exception, repo_id: str, revision: str | None, env: _HubEnv) -> AdvisorError:
    """One-line AdvisorError for a huggingface_hub/httpx failure; HubUnavailable if the Hub is unreachable."""
    from huggingface_hub.errors import (
        DisabledRepoError,
        GatedRepoError,
        HfHubHTTPError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    status = err.response.status_code if isinstance(err, HfHubHTTPError) else None
    gated = isinstance(err, GatedRepoError) or (
        status in (401, 403) and not isinstance(err, RepositoryNotFoundError)
    )
    if gated and env.token:
        return AdvisorError(
            f"{repo_id}: gated repo and HF_TOKEN is not granted access (HTTP {status}); "
            "request access on its Hub page or use another token"
        )
    if gated:
        return AdvisorError(
            f"{repo_id}: gated repo (HTTP {status}); accept its terms on the Hub and set HF_TOKEN"
        )
    if isinstance(err, RevisionNotFoundError):
        return AdvisorError(f"{repo_id}: revision {revision!r} not found on the Hub")
    if isinstance(err, RepositoryNotFoundError):
        return AdvisorError(
            f"{repo_id}: repo not found on {env.endpoint} (HTTP {status}; private repos need HF_TOKEN)"
        )
    if isinstance(err, DisabledRepoError):
        return AdvisorError(f"{repo_id}: repo is disabled on the Hub")
    if isinstance(err, RemoteEntryNotFoundError):
        return AdvisorError(f"{repo_id}@{revision or 'main'}: the repo has no {CONFIG_FILE}")
    import httpx2

    first_line = str(err).strip().split("\n", 1)[0]
    reason = f"HTTP {status}" if status is not None else (" ".join(first_line.split()) or type(err).__name__)
    if isinstance(err, httpx2.TimeoutException):
        reason = f"no answer within {env.timeout} s"
    return HubUnavailable(
        f"{repo_id}: cannot read it from the Hub at {env.endpoint} ({reason[:200]}), not in the HF cache"
    )
