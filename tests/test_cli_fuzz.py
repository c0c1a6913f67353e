"""Issue #11: random flag combinations through every command, valid and invalid values, unknown flags, missing and
odd arguments (very long strings, devices, paths): every run exits 0 or 2, never with a traceback or an
"internal error". The flags come from the commands themselves (click's parameters), so a new flag is covered."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from conftest import CASE_STUDY, REPO
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from advisor.cli import app, main

FIX = REPO / "tests" / "fixtures"
ODD = ["", " ", "x" * 700, "ünïcode/模型", "../../../etc/passwd", "/dev/urandom", "/dev/null", "--json", "-1",
       "nan", "1e308", "0", "a/b/c/d", "org/name@", "@rev", "C:\\\\x"]
MODELS = ["MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B",
          "no-such-org/no-such-model", "MiniMaxAI/MiniMax-M2.5@deadbeef", str(REPO / "tests" / "data" / "configs"),
          str(REPO / "tests" / "data" / "configs" / "Qwen--Qwen3-32B.json"), str(FIX / "configs" / "zephyr_moe.json")]
FILES = [str(CASE_STUDY), str(FIX / "bench" / "mixed_rows.csv"), str(FIX / "bench" / "vllm_bench_serve.json"),
         str(FIX / "bench" / "vllm_bench_append.jsonl"), str(REPO / "README.md"), str(REPO / "tests")]
POSITIONAL = {"inspect": MODELS, "fit": MODELS, "predict": MODELS, "rank": MODELS, "pareto": MODELS, "check": FILES,
              "calibrate": FILES, "hw show": ["rtx-pro-6000-server", "h100-sxm", "nope", str(REPO / "hwprofiles")],
              "hw import-topo": [str(p) for p in (FIX / "topo").iterdir()] + [str(FIX / "nccl")],
              "hw import-nccl": [str(p) for p in (FIX / "nccl").iterdir()] + [str(FIX / "topo" / "hgx_nvswitch.txt")],
              "hw list": []}
INTS = ["1", "2", "4", "8", "3", "0", "-2", "64", "1024", "abc", "1.5", "99999999999999999999"]
FLOATS = ["0.9", "0.5", "1", "0", "1.5", "-1", "nan", "inf", "0.001", "30", "1e308"]
TEXT = {"--hw": ["rtx-pro-6000-server", "h100-sxm", "b200-sxm", "nope", str(REPO / "hwprofiles" / "l40s.toml")],
        "--engine": ["vllm", "sglang", "trtllm", "tgi"],
        "--objective": ["latency", "throughput", "goodput", "best-under-slo", "x"],
        "--quality": ["GPQA Diamond", "LMArena", "AA", "nope"],
        "--quality-file": [str(REPO / "advisor" / "quality" / "quality.csv"), str(CASE_STUDY), "/nonexistent.csv"],
        "--kv-cache-dtype": ["auto", "fp8", "bf16", "int3"], "--weight-dtype": ["fp8", "nvfp4", "int4", "mxfp4",
                                                                                  "bf16", "fp3"],
        "--model": MODELS[:3], "--op": ["allreduce", "alltoall", "allgather", "broadcast", ""],
        "--calibration": [str(REPO / "advisor" / "calibrations" / "vllm.json"),
                          str(REPO / "advisor" / "calibrations" / "sglang.json"), str(CASE_STUDY)]}


def _commands() -> dict[str, Any]:
    """Every leaf command by its words ("rank", "hw show"); typer ships its own click, so by duck typing."""
    root: Any = typer.main.get_command(app)
    out: dict[str, Any] = {}
    for name, cmd in root.commands.items():
        if hasattr(cmd, "commands"):
            out.update({f"{name} {sub}": c for sub, c in cmd.commands.items()})
        else:
            out[name] = cmd
    return out


COMMANDS = _commands()


def _values(opt: Any, out_dir: Path) -> list[str]:
    name = opt.opts[-1] if opt.opts[-1].startswith("--") else opt.opts[0]
    if name in ("-o", "--output", "--plot"):
        return [str(out_dir / "o.json"), str(out_dir / "o.png"), str(out_dir / "o.svg"), str(out_dir / "o.toml"),
                str(out_dir), str(out_dir / "missing" / "deeper" / "o.json"), "x" * 700, ""]
    if name in TEXT:
        return TEXT[name]
    kind = str(getattr(getattr(opt, "type_descriptor", None), "annotation", ""))  # typer 0.29: no click `type`
    return INTS if "int" in kind else FLOATS if "float" in kind else ODD


# no model: the whole catalog (89 models), ~3 s a run; drawn with 1-3 models, and pareto's whole catalog once
# (`example`), as rank's and fit's are in test_rank_cli.py
WHOLE_CATALOG = ("rank", "fit", "pareto")


@st.composite
def invocation(draw: st.DrawFn, command: str, out_dir: Path) -> list[str]:
    cmd = COMMANDS[command]
    args = command.split()
    pool = POSITIONAL[command]
    arguments = [p for p in cmd.params if p.param_type_name == "argument"]
    if arguments and pool:
        many = arguments[0].nargs == -1
        n = draw(st.integers(0 if many and command not in WHOLE_CATALOG else 1, 3 if many else 1))
        args += draw(st.lists(st.sampled_from(pool + ODD[:4]), min_size=n, max_size=n))
    options = [p for p in cmd.params if p.param_type_name == "option" and p.opts[0] not in ("--help", "-h")]
    for opt in draw(st.lists(st.sampled_from(options), max_size=5)) if options else []:
        args.append(draw(st.sampled_from(opt.opts)))
        if not opt.is_flag:
            args.append(draw(st.sampled_from(_values(opt, out_dir) + ODD[:3])))
    if draw(st.booleans()) and draw(st.booleans()):
        args.insert(draw(st.integers(0, len(args))), draw(st.sampled_from(["--frobnicate", "-z", "--json=1", "--",
                                                                            "-h"])))
    return args


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Offline, and run from an empty folder: a relative output path drawn (" ", "a/b/c/d") lands there, not in
    the working tree."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "HF_HOME", "COLUMNS", "ADVISOR_DEBUG")}
    os.environ.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path_factory.mktemp("hf")), COLUMNS="100")
    os.environ.pop("ADVISOR_DEBUG", None)
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    try:
        yield tmp_path_factory.mktemp("out")
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["advisor", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        sys.argv = argv
    return code, out.getvalue() + err.getvalue()


EXAMPLES = {"rank": 60, "pareto": 30, "predict": 80, "fit": 60, "inspect": 80, "check": 60, "calibrate": 40,
            "hw show": 60, "hw list": 10, "hw import-topo": 60, "hw import-nccl": 60}  # ~15 s of CPU in all


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_random_flags_exit_0_or_2_without_traceback(offline: Path, command: str) -> None:
    scale = int(os.environ.get("ADVISOR_FUZZ_SCALE", "1"))  # more examples, random seeds: exploring, not CI
    @settings(max_examples=EXAMPLES.get(command, 10) * scale, deadline=None, derandomize=scale == 1, database=None,
              suppress_health_check=list(HealthCheck))
    @given(args=invocation(command, offline))
    def once(args: list[str]) -> None:
        code, text = _run(args)
        assert code in (0, 2), (args, code, text[-1500:])
        assert "Traceback" not in text and "internal error" not in text, (args, text[-1500:])

    if command == "pareto":
        once = example(args=["pareto"])(once)
    once()


def test_every_command_is_fuzzed() -> None:
    assert set(COMMANDS) == set(POSITIONAL)
