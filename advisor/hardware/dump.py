"""Write profiles back to TOML (for `hw import-nccl -o` and the comm-term generator)."""

from __future__ import annotations

import json
from typing import Any

from advisor.hardware.schema import HardwareProfile


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if v == v and abs(v) != float("inf") else "nan"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _is_table_list(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def table_to_toml(data: dict[str, Any], prefix: str = "") -> str:
    """TOML text of a nested dict: scalars, then [sub.tables], then [[arrays.of.tables]]."""
    lines = [
        f"{k} = {_scalar(v)}"
        for k, v in data.items()
        if not isinstance(v, dict) and not _is_table_list(v) and v is not None
    ]
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in data.items():
        if isinstance(v, dict):
            name = f"{prefix}{k}"
            out += f"\n[{name}]\n" + table_to_toml(v, name + ".")
    for k, v in data.items():
        if _is_table_list(v):
            name = f"{prefix}{k}"
            for item in v:
                out += f"\n[[{name}]]\n" + table_to_toml(item, name + ".")
    return out


def profile_to_toml(hw: HardwareProfile, header: str = "") -> str:
    """Whole profile as TOML (None fields and empty lists of tables left out)."""
    data = hw.model_dump(mode="python", exclude_none=True)
    body = table_to_toml(data)
    return "".join(f"# {ln}\n" for ln in header.splitlines()) + body
