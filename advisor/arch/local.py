"""Read config files from disk: one clear error per bad file, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.arch.fields import ConfigError, json_type

MAX_CONFIG_BYTES = 16 << 20  # real config.json files are < 100 kB; larger is not a config


def read_json_file(path: Path) -> dict[str, Any]:
    """Parse a JSON object from `path` (no code is ever executed from a model repo)."""
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from None
    if not path.is_file():  # a device (/dev/urandom), pipe or socket: its size says nothing, reading may not end
        raise ConfigError(f"{path}: not a regular file, expected a JSON config file")
    if size == 0:
        raise ConfigError(f"{path}: file is empty")
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: {size} bytes is too large for a config file")
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise ConfigError(f"{path}: binary file, expected JSON")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text, expected JSON") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    except RecursionError:
        raise ConfigError(f"{path}: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got a JSON {json_type(data)}")
    return data


def read_local(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None, Path]:
    """Config dict, optional ModelOpt `hf_quant_config.json` beside it, and the config's path."""
    if path.is_dir():
        config = path / "config.json"
        if not config.exists():
            raise ConfigError(f"{path}: folder has no config.json")
    else:
        config = path
    data = read_json_file(config)
    side = config.parent / "hf_quant_config.json"
    sidecar = read_json_file(side) if side.exists() else None
    return data, sidecar, config
