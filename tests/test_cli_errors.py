"""Issue #11: a CLI a new user cannot break. Usage errors keep click's message and exit 2; bad input is one line
and exit 2; a plan the engine cannot run is a result with its reason; Ctrl-C exits 130."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from conftest import REPO, Run, assert_one_line, many_rows

MINIMAX, KIMI = "MiniMaxAI/MiniMax-M2.5", "moonshotai/Kimi-K2.5"


# --- item 2: EP other than TP x DP is refused with vLLM's reason, never a ZeroDivisionError -------------------


@pytest.mark.parametrize(("args", "ep", "tp_dp"), [
    (("fit", KIMI, "--ep", "8"), 8, 1),
    (("predict", MINIMAX, "--ep", "8"), 8, 1),
    (("predict", MINIMAX, "--tp", "2", "--ep", "8"), 8, 2),
    (("predict", MINIMAX, "--tp", "8", "--ep", "4"), 4, 8),
])
def test_ep_other_than_tp_x_dp_is_a_result_with_the_reason(advisor, args: tuple[str, ...], ep: int,
                                                            tp_dp: int) -> None:
    r = advisor(*args, "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    d = doc[0] if isinstance(doc, list) else doc
    assert d["fits"] is False and d["plan"]["ep"] == ep
    assert f"EP{ep} is not TP x DP = {tp_dp}" in d["reason"] and "FusedMoEParallelConfig.make" in d["reason"]
    assert d.get("tpot_ms") is None
    human = advisor(*args)
    assert human.code == 0 and f"EP{ep} is not TP x DP" in human.out and "None" not in human.out


# --- item 3: usage errors are click's, exit 2; -h and --version work; typer is pinned ----------------------


@pytest.mark.parametrize(("args", "says"), [
    (("rank", "--foo"), "No such option: --foo"),
    (("predict",), "Missing argument"),
    (("rank", "--concurrency", "abc"), "Invalid value for '--concurrency'"),
    (("predict", MINIMAX, "--tp", "0"), "Invalid value for '--tp'"),
    (("frobnicate",), "No such command 'frobnicate'"),
])
def test_usage_errors_keep_clicks_message_and_exit_2(advisor, args: tuple[str, ...], says: str) -> None:
    r = advisor(*args)
    assert r.code == 2, (r.out, r.err)
    assert "internal error" not in r.err and "Traceback" not in r.err
    assert r.err.startswith("Usage: advisor") and says in r.err, r.err


@pytest.mark.parametrize("args", [(), ("hw",)])
def test_bare_command_groups_show_usage_and_exit_2(advisor, args: tuple[str, ...]) -> None:
    r = advisor(*args)
    assert r.code == 2 and "Usage: advisor" in r.out + r.err and "internal error" not in r.err


def test_help_and_version(advisor) -> None:
    for flag in ("-h", "--help"):
        r = advisor(flag)
        assert r.code == 0 and "Usage: advisor" in r.out and "rank" in r.out
    r = advisor("rank", "-h")
    assert r.code == 0 and "--objective" in r.out
    from advisor import __version__

    r = advisor("--version")
    assert r.code == 0 and r.out.strip() == f"advisor {__version__}"


def test_typer_is_pinned_to_the_tested_range() -> None:
    import typer

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if d.startswith("typer")]
    bounds = dict(re.findall(r"(>=|<)([\d.]+)", spec))
    version = tuple(int(x) for x in typer.__version__.split(".")[:2])
    assert set(bounds) == {">=", "<"}, spec
    assert tuple(int(x) for x in bounds[">="].split(".")) <= version < tuple(int(x) for x in bounds["<"].split("."))


# --- item 4: Ctrl-C exits 130 and leaves the old file ---------------------------------------------------------


def _interrupt(args: list[str], tmp_path: Path, after_s: float) -> subprocess.CompletedProcess[str]:
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(REPO)}
    # a runner started in the background (`cmd &`) ignores SIGINT, and Python keeps an ignored SIGINT ignored:
    # restore the default in the child so that it gets its KeyboardInterrupt, as in a terminal
    p = subprocess.Popen([sys.executable, "-m", "advisor.cli", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(after_s)
    assert p.poll() is None, "the command ended before it could be interrupted: give it more work"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def _many_rows(tmp_path: Path, copies: int) -> Path:
    """silicon_dev.csv repeated with varied concurrency: enough rows that a command takes seconds."""
    return many_rows(tmp_path / "many.csv", 1814 * copies)


def test_ctrl_c_during_calibrate_exits_130_and_keeps_the_old_file(tmp_path: Path) -> None:
    # 100 copies: ~12 s of work on a fast core (20 copies finished in 2.4 s, before the interrupt at 2.5 s)
    rows = _many_rows(tmp_path, 100)
    old = tmp_path / "x.json"
    old.write_text("old calibration\n")
    r = _interrupt(["calibrate", str(rows), "--hw", "b200-sxm", "--engine", "sglang", "-o", str(old)], tmp_path,
                   2.5)
    # 130, or killed by the SIGINT itself: interrupted while it imports scipy (the fit's lazy import, ~2.5 s in),
    # the process dies by the signal about half the time, with nothing on stderr; a shell reports both as 130
    assert r.returncode in (130, -signal.SIGINT), (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert old.read_text() == "old calibration\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".x.json")] == []  # no temp file left


def test_ctrl_c_during_check_exits_130(tmp_path: Path, rows_200k: Path) -> None:
    r = _interrupt(["check", str(rows_200k)], tmp_path, 2.0)
    assert r.returncode in (130, -signal.SIGINT) and "Traceback" not in r.stderr, (r.returncode, r.stderr)


# --- item 5: a 600-character model id is one line ---------------------------------------------------------


@pytest.mark.parametrize("ref", ["a" * 600, "org/" + "b" * 600, "/tmp/" + "c" * 600])
def test_very_long_model_reference_is_one_line(advisor, ref: str) -> None:
    assert_one_line(advisor("inspect", ref), f"{len(ref)} characters")


# --- item 6: a max model length beyond the model's maximum is refused everywhere ------------------------------


@pytest.mark.parametrize("command", ["rank", "fit", "predict"])
def test_max_model_len_beyond_the_model_is_refused(advisor, command: str) -> None:
    r = advisor(command, MINIMAX, "--max-model-len", "1000000")
    assert_one_line(r, "--max-model-len", "1000000", "196608")


def _one(r: Run) -> dict:
    assert r.code == 0, r.err
    return json.loads(r.out)


# --- item 18: an unknown model is "not found" with the same exit code everywhere ------------------------------

UNKNOWN = "no-such-org/no-such-model"


@pytest.mark.parametrize("command", ["inspect", "fit", "rank", "predict"])
def test_only_unknown_models_exit_2_not_found(advisor, command: str) -> None:
    assert_one_line(advisor(command, UNKNOWN), UNKNOWN, "not found")


@pytest.mark.parametrize("command", ["inspect", "fit", "rank"])
def test_an_unknown_model_beside_known_ones_is_not_found_and_exit_0(advisor, command: str) -> None:
    r = advisor(command, UNKNOWN, MINIMAX, "--json")
    assert r.code == 0, r.err
    docs = json.loads(r.out)
    assert MINIMAX in {d["model"] for d in docs}
    said = [d for d in docs if d["model"] == UNKNOWN]
    if command in ("rank", "inspect"):  # listed, not found (not "does not run"); inspect keeps it as rank does
        assert len(said) == 1 and said[0]["found"] is False and said[0]["reason"].startswith("not found:")
    if command == "rank":
        human = advisor(command, UNKNOWN, MINIMAX)
        row = next(ln for ln in human.out.splitlines() if UNKNOWN in ln)
        assert "not found" in row and "does not run" not in human.out
    if command != "rank":
        assert f"advisor: {UNKNOWN}: not found:" in r.err
    if command == "fit":
        assert said == []


# --- item 20 (part): layer counts add up ---------------------------------------------------------------------


def test_nemotron_layer_kinds_add_up(advisor) -> None:
    (d,) = _one(advisor("inspect", "nvidia/Nemotron-H-56B-Base-8K", "--json"))
    mixers = sum(v for k, v in d["layer_kinds"].items() if not k.endswith("_mlp"))
    assert d["num_layers"] == 118 and d["mlp_only_layers"] == 54 and mixers + 54 == 118
    out = advisor("inspect", "nvidia/Nemotron-H-56B-Base-8K").out
    assert "118: 10 full, 54 mamba, 54 MLP-only" in out


# --- item 20: cosmetics --------------------------------------------------------------------------------------


def test_every_option_and_argument_has_help_and_every_command_a_description() -> None:
    import typer

    from advisor.cli import app

    def walk(cmd, path):  # type: ignore[no-untyped-def]
        assert (cmd.help or "").strip(), path
        for p in cmd.params:
            assert (getattr(p, "help", None) or "").strip(), (path, p.name)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), ["advisor"])


def test_max_model_len_help_shows_its_default(advisor) -> None:
    out = " ".join(advisor("rank", "-h", columns=250).out.split())
    assert "Context per sequence the engine is started with, at least 2 (one prompt token and one generated) " \
           "[default: min(model maximum, 32768), raised to input + output length]." in out


@pytest.mark.parametrize(("content", "says"), [
    ("null", "expected a JSON object, got a JSON null"),
    ("[1]", "expected a JSON object, got a JSON array"),
    ('"x"', "expected a JSON object, got a JSON string"),
])
def test_config_json_types_have_json_names(advisor, tmp_path: Path, content: str, says: str) -> None:
    f = tmp_path / "config.json"
    f.write_text(content)
    r = advisor("inspect", str(f))
    assert_one_line(r, says)
    assert "NoneType" not in r.err and "list" not in r.err


def test_a_huge_number_is_quoted_short(advisor, tmp_path: Path) -> None:
    cfg = json.loads((REPO / "tests" / "data" / "configs" / "Qwen--Qwen3-32B.json").read_text())
    cfg["hidden_size"] = 1e308
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg))
    r = advisor("inspect", str(f))
    assert_one_line(r, "field 'hidden_size' = 1e+308 is outside [1, 1,048,576]")
    assert len(r.err) < 200


@pytest.mark.parametrize("args", [("inspect",), ("check",), ("hw", "import-nccl"), ("hw", "import-topo"),
                                  ("calibrate", "--hw", "h100-sxm", "-o", "/tmp/never.json")])
def test_a_device_file_is_not_called_empty(advisor, args: tuple[str, ...]) -> None:
    cmd = [*args[:2], "/dev/urandom", *args[2:]] if args[0] == "hw" else [args[0], "/dev/urandom", *args[1:]]
    r = advisor(*cmd)
    assert_one_line(r, "/dev/urandom", "not a")
    assert "empty" not in r.err


def test_one_of_a_thing_is_singular(advisor) -> None:
    out = advisor("predict", MINIMAX, "--tp", "4").out
    assert ", 1 user, 1,024 in / 1,024 out" in out and "1 users" not in out
    why = _one(advisor("rank", "Qwen/Qwen3-30B-A3B", "--gpus", "1", "--json"))[0]["why"]
    assert why.startswith("TP1 on 1 GPU:")


@pytest.mark.parametrize("args", [
    ("calibrate", str(REPO / "advisor" / "examples" / "case_study.csv"), "--hw", "rtx-pro-6000-server", "--force"),
    ("hw", "import-nccl", str(REPO / "tests" / "fixtures" / "nccl" / "all_reduce_perf_rtxpro6000_8gpu.txt"), "--hw",
     "rtx-pro-6000-server"),
])
def test_an_output_path_the_os_refuses_is_one_line(advisor, tmp_path: Path, args: tuple[str, ...]) -> None:
    for out in ("y" * 700, str(tmp_path)):  # a name too long for the file system; an existing folder
        r = advisor(*args, "-o", out)
        assert_one_line(r, "cannot write there" if out.startswith("y") else "is a directory")
    r = advisor("rank", MINIMAX, "--plot", "z" * 700 + ".png")
    assert_one_line(r, "cannot write there")
