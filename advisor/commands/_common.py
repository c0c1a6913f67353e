"""Helpers shared by commands: printing JSON and one-line validation errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from advisor.errors import AdvisorError


def print_json(doc: Any) -> None:
    """One JSON document on stdout, nothing else."""
    sys.stdout.write(json.dumps(doc, indent=2, default=_default) + "\n")


def _default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def require(cond: bool, flag: str, why: str) -> None:
    """Exit-2 error naming the flag when a value is malformed."""
    if not cond:
        raise AdvisorError(f"{flag}: {why}")
