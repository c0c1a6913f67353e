"""Write profiles back to TOML (for `hw import-nccl -o` and the comm-term generator) through `tomli-w`.

tomli-w writes TOML 1.0 that `tomllib` (what `advisor.hardware.load` reads with) parses back to the same
dict; it writes no comments and no null, so a header comment is prepended here and None values are dropped
(a field left out is None again when pydantic reads it back).
"""

from __future__ import annotations

from typing import Any

import tomli_w

from advisor.hardware.schema import HardwareProfile


def _without_none(value: Any) -> Any:
    """The same nested dicts and lists with every None-valued key left out (TOML has no null)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_none(v) for v in value]
    return value


def table_to_toml(data: dict[str, Any]) -> str:
    """TOML text of a nested dict (tomli_w.dumps: scalars, then [sub.tables] and [[arrays.of.tables]])."""
    return tomli_w.dumps(_without_none(data))


def profile_to_toml(hw: HardwareProfile, header: str = "") -> str:
    """Whole profile as TOML (None fields left out), after one `# ` comment line per header line."""
    body = table_to_toml(hw.model_dump(mode="python", exclude_none=True))
    return "".join(f"# {ln}\n" for ln in header.splitlines()) + body
