"""One process of a deployment and the shell line that starts it (every argument quoted), shared by the one-node
(`decide/command.py`), multi-node (`decide/multinode.py`) and disaggregated commands."""

from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Launch:
    """One process of a deployment: its role ("server"; clusters and disaggregated pools add theirs), the node
    and GPUs it runs on, its environment and its argument vector. `line` is the POSIX-shell line that runs it,
    every argument quoted (`shlex.quote`), safe to paste whatever the model path holds."""

    role: str
    node: int
    gpus: tuple[int, ...]
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    files: tuple[tuple[str, str], ...] = ()  # (name, content) the command reads, written first by `line`

    @property
    def line(self) -> str:
        write = [f"printf '%s\\n' {shlex.join(text.splitlines())} > {shlex.quote(name)} &&"
                 for name, text in self.files]
        env = [f"{k}={shlex.quote(v)}" for k, v in self.env]
        return " ".join([*write, *env, shlex.join(self.argv)])

    def doc(self) -> dict[str, object]:
        """The JSON shape of one command of a deployment (`RankedPlan.commands`)."""
        return {"role": self.role, "node": self.node, "gpus": list(self.gpus), "env": dict(self.env),
                "files": dict(self.files), "argv": list(self.argv), "line": self.line}
