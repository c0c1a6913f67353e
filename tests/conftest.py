"""Shared fixtures. Reference data lives in the repo: `tests/data/` (sources and licences in its README)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from advisor.arch.model import ModelArch
from advisor.hardware import HardwareProfile

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
CONFIGS = DATA / "configs"
BENCH = DATA / "bench"
COLLECTIVES = DATA / "collectives"
CASE_STUDY = REPO / "advisor" / "examples" / "case_study.csv"


# Hypothesis keeps no example database, and what else it stores (its cache of the constants in our modules, read
# while tests are collected) goes to a temporary folder for the run: nothing under the working tree (no
# `.hypothesis/`).
settings.register_profile("repo", database=None)
settings.load_profile("repo")
_HYPOTHESIS_HOME = Path(tempfile.mkdtemp(prefix="advisor-tests-hypothesis-"))
set_hypothesis_home_dir(_HYPOTHESIS_HOME)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HYPOTHESIS_HOME, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts): one worker per CPU this process may run on. pytest-xdist's own count is
    psutil's physical cores, one on a machine whose 2 vCPUs are a core's two threads. PYTEST_XDIST_AUTO_NUM_WORKERS
    still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or not hasattr(os, "sched_getaffinity"):
        return None
    return len(os.sched_getaffinity(0))


@pytest.fixture(scope="session")
def configs_dir() -> Path:
    """tests/data/configs: HF config.json corpus (INDEX.md) with ModelOpt sidecars in _sidecars/."""
    return CONFIGS


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    """tests/data/bench: measured serving rows (silicon_dev.csv, public.csv and its cleaned rows)."""
    return BENCH


@pytest.fixture(scope="session")
def hw() -> HardwareProfile:
    """The default box, rtx-pro-6000-server."""
    from advisor.hardware import load_profile

    return load_profile("rtx-pro-6000-server")


def catalog_arch(model: str) -> ModelArch:
    """A bundled catalog model's architecture (the test fails when it is missing)."""
    from advisor.catalog import lookup

    entry = lookup(model)
    assert entry is not None, model
    return entry.arch


@dataclass(frozen=True)
class Run:
    """What one CLI invocation gave: exit code, stdout, stderr."""

    code: int
    out: str
    err: str


@pytest.fixture(scope="session")
def empty_hf_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hf_home")  # an empty Hugging Face cache: a fresh install


@pytest.fixture
def advisor(monkeypatch: pytest.MonkeyPatch, empty_hf_home: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Run]:
    """Run `advisor ARGS...` in-process through `advisor.cli.main` (its exit codes and error handling), offline
    on the bundled catalog, with a 250-column terminal unless `columns=` says otherwise, from an empty folder (a
    relative output path lands there, not in the working tree)."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(empty_hf_home))
    monkeypatch.delenv("ADVISOR_DEBUG", raising=False)

    def run(*args: str, columns: int = 250) -> Run:
        monkeypatch.setenv("COLUMNS", str(columns))
        return Run(*_main(args))

    return run


def _build_the_cli_once() -> None:
    """typer builds the click command tree from the commands' signatures on every `typer.main.get_command(app)`
    (20-30 ms: most of a short in-process CLI run, and the suite makes ~1,200). Here it is built once per test
    process, as a process running `advisor` builds it once. `advisor.cli.main` wraps every parameter's callback of
    the tree it gets (`_harden`), so each call hands the tree back with the callbacks it was built with, as a fresh
    build would."""
    import typer.main

    build = typer.main.get_command
    built: dict[int, tuple[Any, list[tuple[Any, Any]]]] = {}

    def params(command: Any) -> Iterator[Any]:
        yield from command.params
        for sub in getattr(command, "commands", {}).values():
            yield from params(sub)

    def get_command(typer_instance: Any) -> Any:
        if id(typer_instance) not in built:
            command = build(typer_instance)
            built[id(typer_instance)] = (command, [(p, p.callback) for p in params(command)])
        command, callbacks = built[id(typer_instance)]
        for param, callback in callbacks:
            param.callback = callback
        return command

    typer.main.get_command = get_command


_build_the_cli_once()


def _main(args: tuple[str, ...] | list[str]) -> tuple[int, str, str]:
    """`advisor.cli.main` with `sys.argv = ["advisor", *args]`: its exit code, stdout and stderr."""
    from advisor.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    argv, sys.argv = sys.argv, ["advisor", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def environment(env: Mapping[str, str | None], drop: tuple[str, ...] = (), cwd: Path | None = None) -> Iterator[None]:
    """Inside: the variables starting with a `drop` prefix removed, then `env` set (None: unset), and `cwd` the
    working directory; all restored on leaving."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        for k in [k for k in os.environ if drop and k.startswith(drop)]:
            del os.environ[k]
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def cli(*args: str, env: Mapping[str, str | None] | None = None, drop: tuple[str, ...] = (),
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`advisor ARGS...` in this process: what `subprocess.run([sys.executable, "-m", "advisor.cli", *args],
    capture_output=True, text=True)` gives (exit code, stdout, stderr, through the same `advisor.cli.main`), without
    starting an interpreter and importing the package for every call. `env`, `drop`, `cwd`: as in `environment`.
    Tests of what only a real process shows (import cost, signals, a terminal, a broken pipe) keep a subprocess."""
    with environment(env or {}, drop, cwd):
        code, out, err = _main(args)
    return subprocess.CompletedProcess(["advisor", *args], code, out, err)


def assert_one_line(r: Run, *words: str) -> None:
    """Exit 2, no traceback, one line on stderr naming every word."""
    assert r.code == 2, (r.code, r.out, r.err)
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("advisor: error:"), r.err
    for w in words:
        assert w in lines[0], (w, lines[0])


def many_rows(path: Path, rows: int) -> Path:
    """`rows` measurement rows from the repo's own tests/data/bench/silicon_dev.csv, repeated with the concurrency
    shifted by 0..6 per pass (so the rows are not all copies), written to `path`."""
    lines = (BENCH / "silicon_dev.csv").read_text().splitlines()
    head, body = lines[0], lines[1:]
    conc = head.split(",").index("concurrency")
    out, k = [head], 0
    while len(out) <= rows:
        for ln in body:
            cells = ln.split(",")
            if cells[conc].isdigit():
                cells[conc] = str(int(cells[conc]) + k % 7)
            out.append(",".join(cells))
            if len(out) > rows:
                break
        k += 1
    path.write_text("\n".join(out) + "\n")
    return path


@pytest.fixture(scope="session")
def rows_200k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200,000 measurement rows (`many_rows`), written once per session."""
    return many_rows(tmp_path_factory.mktemp("bench") / "rows_200k.csv", 200_000)
