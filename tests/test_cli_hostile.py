"""Issue #52: input a new user (or a script) may give, answered with one line and exit 2 (or 130 for Ctrl-C), never
a traceback: JSON nested 100k deep, numbers no option means, Ctrl-C while the CLI loads, an output folder that does
not exist, a revision that is empty, a file that is not `nvidia-smi topo -m` output; and the small things (plurals,
--frontier-only, inspect's unknown models)."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import BENCH, CASE_STUDY, REPO, assert_one_line

MINIMAX = "MiniMaxAI/MiniMax-M2.5"


# --- JSON nested 100k deep --------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000,
                                  '{"mean_tpot_ms": 1}\n' + "[" * 100_000 + "]" * 100_000])
@pytest.mark.parametrize("command", ["check", "calibrate"])
def test_deeply_nested_json_is_one_line(advisor, tmp_path: Path, text: str, command: str) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(text)
    extra = ["--hw", "rtx-pro-6000-server", "-o", str(tmp_path / "x.json")] if command == "calibrate" else []
    assert_one_line(advisor(command, str(deep), *extra), str(deep), "JSON nested too deeply")


def test_deeply_nested_calibration_and_profile_are_one_line(advisor, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert_one_line(advisor("rank", MINIMAX, "--calibration", str(deep)), "--calibration", "RecursionError")
    toml = tmp_path / "deep.toml"
    toml.write_text("x = " + "[" * 100_000 + "]" * 100_000)
    assert_one_line(advisor("rank", MINIMAX, "--hw", str(toml)), str(toml), "nested too deeply")


# --- numbers no option means ------------------------------------------------------------------------------------


def _numeric_options() -> list[tuple[str, str, str]]:
    """(command path, flag, kind) of every option of every command that takes a number."""
    import typer.main

    from advisor.cli import app

    out = []

    def walk(cmd: Any, path: str) -> None:
        for p in cmd.params:
            ann = getattr(getattr(p, "type_descriptor", None), "annotation", None)
            kind = {int: "int", float: "float", list[float]: "float", list[int]: "int"}.get(ann)
            if kind and getattr(p, "opts", None):
                out.append((path, max(p.opts, key=len), kind))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    return out


NUMERIC = _numeric_options()
ARGS = {"rank": [MINIMAX], "predict": [MINIMAX], "fit": [MINIMAX], "pareto": [MINIMAX], "check": [str(CASE_STUDY)],
        "calibrate": [str(CASE_STUDY), "--hw", "rtx-pro-6000-server", "-o", "x.json"], "hw show": ["h100-sxm"],
        "hw import-nccl": [str(REPO / "tests" / "fixtures" / "nccl")], "hw import-topo": ["x"], "inspect": [],
        "hw list": []}


def test_every_numeric_option_is_found() -> None:
    flags = {(c, f) for c, f, _ in NUMERIC}
    assert {("rank", "--gpu-hour-price"), ("rank", "--min-quality"), ("rank", "--concurrency"),
            ("predict", "--concurrency"), ("predict", "--spec-acceptance"), ("fit", "--max-model-len"),
            ("pareto", "--max-tpot-ms"), ("check", "--concurrency"), ("hw import-nccl", "--gpus")} <= flags
    assert {c for c, _, _ in NUMERIC} <= set(ARGS)


@pytest.mark.parametrize(("command", "flag", "kind"), NUMERIC, ids=[f"{c} {f}" for c, f, _ in NUMERIC])
def test_non_finite_and_absurd_numbers_are_refused_naming_the_flag(advisor, command: str, flag: str,
                                                                    kind: str) -> None:
    values = ["inf", "nan", "-inf", "1e300"] if kind == "float" else [str(10**26), str(2**31)]
    for value in values:
        r = advisor(*command.split(), *ARGS[command], flag, value, "--json")
        assert r.code == 2, (command, flag, value, r.code, r.out[:200], r.err)
        if r.err.startswith("Usage:"):  # below the option's own minimum: click's message names it too
            assert flag in r.err and "Traceback" not in r.err
            continue
        assert_one_line(r, f"{flag}: ")
        assert r.out == ""


def test_the_issues_numbers(advisor) -> None:
    assert_one_line(advisor("rank", MINIMAX, "--gpu-hour-price", "inf", "--json"), "--gpu-hour-price: inf is not a "
                                                                                    "finite number")
    assert_one_line(advisor("rank", MINIMAX, "--min-quality", "nan"), "--min-quality: nan is not a finite number")
    assert_one_line(advisor("rank", MINIMAX, "--concurrency", str(10**26)), "--concurrency: 1e+26 is beyond any "
                                                                              "sensible value")
    ok = advisor("rank", MINIMAX, "--gpu-hour-price", "2.5", "--json")  # finite, sensible: as before
    assert ok.code == 0 and math.isfinite(json.loads(ok.out)[0]["usd_per_mtok"])


# --- Ctrl-C while the CLI loads ---------------------------------------------------------------------------------

# the CLI run as `python -m advisor.cli`, with a SIGINT sent to itself the moment it starts importing MODULE (a
# Ctrl-C typed while the CLI loads, at a known point instead of a guessed time)
INTERRUPT_AT = """
import builtins, os, runpy, signal, sys
real, target = builtins.__import__, sys.argv[1]
def hook(name, *args, **kwargs):
    if name == target and not getattr(hook, "sent", False):
        hook.sent = True
        os.kill(os.getpid(), signal.SIGINT)
    return real(name, *args, **kwargs)
builtins.__import__ = hook
sys.argv = ["advisor", *sys.argv[2:]]
runpy.run_module("advisor.cli", run_name="__main__", alter_sys=True)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("module", ["typer", "typer.main", "advisor.errors", "advisor.commands", "advisor.engines",
                                    "advisor.report.sink"])
def test_ctrl_c_while_the_cli_loads_exits_130_without_a_traceback(tmp_path: Path, module: str) -> None:
    # a runner started in the background ignores SIGINT: restore the default in the child, as in a terminal
    r = subprocess.run([sys.executable, "-c", INTERRUPT_AT, module, "--version"], capture_output=True, text=True,
                       env=_env(tmp_path), cwd=tmp_path, timeout=120,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "KeyboardInterrupt" not in r.stderr, r.stderr
    assert r.stdout == ""


def test_ctrl_c_early_in_a_real_start_exits_130_without_a_traceback(tmp_path: Path) -> None:
    # the child reports each import as it finishes (-X importtime); the SIGINT goes once typer's own click has
    # loaded, while typer and the command modules still load (~100 ms more)
    p = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "advisor.cli", "rank", MINIMAX],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path), cwd=tmp_path,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stderr is not None
    for line in p.stderr:
        if line.rstrip().endswith("typer._click.core"):
            p.send_signal(signal.SIGINT)
            break
    out, err = p.communicate(timeout=120)
    err = "\n".join(ln for ln in err.splitlines() if not ln.startswith("import time:"))
    assert p.returncode in (130, -signal.SIGINT), (p.returncode, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


# --- output folders, revisions, topology files -----------------------------------------------------------------


@pytest.mark.parametrize(("args", "flag"), [
    (("calibrate", str(CASE_STUDY), "--hw", "rtx-pro-6000-server", "-o", "nodir/x.json"), "-o"),
    (("pareto", MINIMAX, "-o", "nodir/p.png"), "-o"),
    (("rank", MINIMAX, "--plot", "nodir/p.png"), "--plot"),
    (("hw", "import-nccl", str(REPO / "tests" / "fixtures" / "nccl" / "all_reduce_perf_8gpu_rtxpro6000.txt"),
      "--hw", "rtx-pro-6000-server", "-o", "nodir/p.toml"), "-o"),
])
def test_an_output_folder_that_does_not_exist_is_refused_alike(advisor, args: tuple[str, ...], flag: str) -> None:
    r = advisor(*args)
    assert_one_line(r, f"{flag} nodir/", "folder nodir does not exist")
    assert not Path("nodir").exists()  # the fixture runs in an empty folder: nothing was created


def test_an_empty_revision_is_refused(advisor) -> None:
    for command in ("inspect", "rank", "fit"):
        assert_one_line(advisor(command, f"{MINIMAX}@"), f"{MINIMAX}@: nothing after @")
    assert_one_line(advisor("predict", f"{MINIMAX}@", "--tp", "4"), "nothing after @")


@pytest.mark.parametrize(("text", "says"), [
    ("GPU0 GPU1\nGPU0 X X\n", "header has no CPU Affinity"),  # no affinity column: not nvidia-smi's
    ("GPU0\nGPU0 X blah\n", "header has no CPU Affinity"),
    ("\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\nGPU0\t X\tSYS\tSYS\tSYS\t0-31\n", "readable GPU rows 1 of 4"),
    ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X\tSYS\t0-31\nGPU1\t NODE\tX\t0-31\n", "GPU0-GPU1 is SYS one way and NODE"),
    ("\tGPU0\tGPU2\tCPU Affinity\nGPU0\t X\tSYS\t0-31\nGPU2\t SYS\tX\t0-31\n", "not GPU0..GPU1 in order"),
    ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X\tX\t0-31\nGPU1\t X\tX\t0-31\n", "no readable GPU rows"),
])
def test_a_file_that_is_not_a_topology_is_one_line(advisor, tmp_path: Path, text: str, says: str) -> None:
    f = tmp_path / "topo.txt"
    f.write_text(text)
    assert_one_line(advisor("hw", "import-topo", str(f)), str(f), says)


def test_a_single_gpu_topology_still_reads(advisor, tmp_path: Path) -> None:
    f = tmp_path / "topo.txt"  # one GPU, as nvidia-smi prints it on a one-GPU machine
    f.write_text("\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-15\t0\t\tN/A\n\nLegend:\n")
    r = advisor("hw", "import-topo", str(f), "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["gpus"] == [0]


# --- the small things -------------------------------------------------------------------------------------------


def test_max_model_len_below_two_tokens_is_refused(advisor) -> None:
    r = advisor("fit", MINIMAX, "--tp", "4", "--max-model-len", "1")
    assert r.code == 2 and "--max-model-len" in r.err and "Traceback" not in r.err
    assert advisor("fit", MINIMAX, "--tp", "4", "--max-model-len", "2").code == 0


def test_frontier_only_is_refused_without_json_or_csv(advisor) -> None:
    assert_one_line(advisor("pareto", MINIMAX, "--frontier-only"), "--frontier-only", "--json/--csv")


def test_inspect_json_keeps_an_unknown_model_with_its_reason(advisor) -> None:
    inspect = json.loads(advisor("inspect", MINIMAX, "Foo/Bar", "--json").out)
    rank = json.loads(advisor("rank", MINIMAX, "Foo/Bar", "--json").out)
    assert [d["model"] for d in inspect] == [MINIMAX, "Foo/Bar"]
    unknown = next(d for d in rank if d["model"] == "Foo/Bar")
    assert inspect[1] == {"model": "Foo/Bar", "found": False, "reason": unknown["reason"]}
    assert unknown["reason"].startswith("not found: ")


def test_one_is_singular(advisor) -> None:
    small = "Qwen/Qwen3-0.6B"  # fits on one GPU
    outs = [advisor("rank", small, "--objective", "throughput", "--concurrency", "1"),
            advisor("rank", small, "--objective", "goodput", "--max-tpot-ms", "50", "--concurrency", "1"),
            advisor("predict", small, "--tp", "1")]
    text = "".join(r.out + r.err for r in outs)
    assert all(r.code == 0 for r in outs), [r.err for r in outs]
    assert "fits on 1 GPU at the fewest" in text and "total tok/s at 1 user " in " ".join(text.split())
    for wrong in (" 1 GPUs", " 1 users", "at at "):
        assert wrong not in " ".join(text.split()), wrong
    bench = BENCH / "silicon_dev.csv"  # reasons of rows set aside speak of users too
    assert " 1 users" not in advisor("check", str(bench), "--summary").out
