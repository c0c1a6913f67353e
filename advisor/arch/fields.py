"""Typed access to a config dict: every missing or malformed field is an error naming it."""

from __future__ import annotations

import builtins
import math
from typing import Any

from advisor.errors import AdvisorError

# Sizes beyond these are not a real model: 1M hidden, 100k layers, 64M vocab (guards against absurd input).
_LIMITS = {"default": 1 << 26}


class ConfigError(AdvisorError):
    """A config file that cannot be read into an architecture."""


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
               type(None): "null"}


def json_type(value: Any) -> builtins.str:
    """The JSON name of a parsed value's type (object, array, string, number, boolean, null)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def shown(value: Any, limit: builtins.int = 60) -> builtins.str:
    """A value as an error message quotes it: numbers short (1e+308, not 309 digits), text cut at `limit`."""
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, int | float):
        return f"{value:.6g}" if isinstance(value, float) or abs(value) >= 10**15 else builtins.str(value)
    text = repr(value) if isinstance(value, builtins.str) else json_type(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Cfg:
    """A view over a config dict that names the file and field in every error."""

    def __init__(self, data: dict[str, Any], where: builtins.str):
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a JSON object, got {json_type(data)}")
        self.data = data
        self.where = where

    def has(self, key: builtins.str) -> builtins.bool:
        return self.data.get(key) is not None

    def raw(self, key: builtins.str, default: Any = None) -> Any:
        value = self.data.get(key)
        return default if value is None else value

    def int(self, key: builtins.str, default: builtins.int | None = None, *, minimum: builtins.int = 1,
            maximum: builtins.int = _LIMITS["default"]) -> builtins.int:
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise ConfigError(f"{self.where}: missing required field {key!r}")
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or isinstance(value, float) and (
                not math.isfinite(value) or value != int(value)):
            raise ConfigError(f"{self.where}: field {key!r} must be an integer, got {shown(value)}")
        ivalue = int(value)
        if ivalue < minimum or ivalue > maximum:
            raise ConfigError(f"{self.where}: field {key!r} = {shown(value)} is outside [{minimum:,}, {maximum:,}]")
        return ivalue

    def opt_int(self, key: builtins.str, *, minimum: builtins.int = 1) -> builtins.int | None:
        return self.int(key, minimum=minimum) if self.has(key) else None

    def bool(self, key: builtins.str, default: builtins.bool = False) -> builtins.bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(f"{self.where}: field {key!r} must be true/false, got {shown(value)}")
        return value

    def str(self, key: builtins.str, default: builtins.str = "") -> builtins.str:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise ConfigError(f"{self.where}: field {key!r} must be a string, got {shown(value)}")
        return value

    def list(self, key: builtins.str) -> builtins.list[Any] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise ConfigError(f"{self.where}: field {key!r} must be a list, got {json_type(value)}")
        return value

    def dict(self, key: builtins.str) -> builtins.dict[builtins.str, Any] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ConfigError(f"{self.where}: field {key!r} must be an object, got {json_type(value)}")
        return value

    def sub(self, key: builtins.str) -> Cfg | None:
        d = self.dict(key)
        return None if d is None else Cfg(d, f"{self.where}:{key}")
