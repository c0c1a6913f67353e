"""A printed command is safe to paste: every argument is quoted for POSIX shells (`shlex.quote`), so a model path
holding spaces, `;` or `$(...)` reaches the engine as one argument and runs nothing. The printed line is pasted
into `bash -c` with a recording fake engine first on PATH; the fake receives exactly the JSON `argv`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "data" / "configs" / "Qwen--Qwen3-8B.json"
HOSTILE = "my model;$(touch PWN)`touch PWN2`'\"&|"
FAKE = """#!/bin/sh
exec python3 -c 'import json, sys; json.dump(sys.argv[1:], open("{out}", "w"))' "$@"
"""


def _fake_bin(tmp: Path, names: list[str]) -> Path:
    """A folder of fake engines that record their arguments (`<name>.argv.json`)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name in names:
        exe = bin_dir / name
        exe.write_text(FAKE.replace("{out}", str(tmp / f"{name}.argv.json")))
        exe.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize(("engine", "program"), [("vllm", "vllm"), ("sglang", "python"),
                                                 ("trtllm", "trtllm-serve")])
def test_a_hostile_model_path_reaches_the_engine_as_one_argument(advisor, tmp_path: Path, engine: str,
                                                                  program: str) -> None:
    model_dir = tmp_path / HOSTILE
    model_dir.mkdir()
    shutil.copy(CONFIG, model_dir / "config.json")
    fp8 = ["--kv-cache-dtype", "fp8"] if engine == "trtllm" else []  # TensorRT-LLM then needs its YAML file
    r = advisor("rank", str(model_dir), "--hw", "h100-sxm", "--engine", engine, *fp8, "--json")
    assert r.code == 0, r.err
    (row,) = json.loads(r.out)
    (launch,) = row["commands"]
    assert launch["argv"][0] == program and str(model_dir) in launch["argv"]
    assert bool(launch["files"]) == (engine == "trtllm")
    work = tmp_path / "cwd"
    work.mkdir()
    fake = _fake_bin(tmp_path, [program])
    env = {"PATH": f"{fake}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(["bash", "-c", row["command"]], cwd=work, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads((tmp_path / f"{program}.argv.json").read_text())
    assert got == launch["argv"][1:]  # what the shell handed the program is exactly the advertised argv
    assert not any((d / n).exists() for d in (work, tmp_path, Path(os.getcwd())) for n in ("PWN", "PWN2"))
    if engine == "trtllm":  # the YAML the same line wrote is what the server was pointed at
        for name, text in launch["files"].items():
            assert (work / name).read_text() == text
