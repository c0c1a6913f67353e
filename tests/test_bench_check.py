"""Benchmark of `advisor check` on 200,000 rows (issue #11 item 22: target under 10 s and 500 MB): the repo's own
silicon_dev.csv rows repeated with varied concurrency (`conftest.many_rows`), through the real CLI in a child
process that reports its own peak RSS. Wall time and peak memory are printed with `-s` and go to pytest-benchmark's
`extra_info` when benchmarks are on (`-n0 --benchmark-enable`: pyproject's addopts turn them off for the parallel
run); nothing asserts a time. A terminal on stderr gets a progress bar (rich.progress)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

CHILD = """
import resource, sys
sys.argv = ["advisor", *sys.argv[2:]]
try:
    from advisor.cli import main
    main()
finally:
    open(OUT, "w").write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


def _run(args: list[str], tmp: Path, tty_stderr: bool = False) -> dict[str, Any]:
    """Run `advisor ARGS` in a child; its exit code, stdout size, stderr text, wall seconds and peak RSS (MB)."""
    rss = tmp / f"rss{time.monotonic_ns()}.txt"
    code = CHILD.replace("OUT", repr(str(rss)))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp / "hf"), "PYTHONPATH": str(REPO)}
    out = tmp / "stdout.txt"
    err_text: list[bytes] = []
    start = time.perf_counter()
    with open(out, "wb") as sink:
        if tty_stderr:
            master, slave = pty.openpty()
            p = subprocess.Popen([sys.executable, "-c", code, "advisor", *args], stdout=sink, stderr=slave, env=env)
            os.close(slave)
            reader = threading.Thread(target=_drain, args=(master, err_text))
            reader.start()
            p.wait()
            reader.join()
            os.close(master)
        else:
            p = subprocess.Popen([sys.executable, "-c", code, "advisor", *args], stdout=sink,
                                 stderr=subprocess.PIPE, env=env)
            err_text.append(p.communicate()[1])
    wall = time.perf_counter() - start
    kb = int(rss.read_text())
    return {"code": p.returncode, "stdout": out, "stderr": b"".join(err_text).decode(errors="replace"),
            "wall_s": round(wall, 2), "peak_mb": round(kb / 1024, 1)}


def _drain(fd: int, into: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            return
        if not data:
            return
        into.append(data)


@pytest.mark.parametrize("mode", ["table", "json"])
def test_bench_check_200k_rows(benchmark: Any, rows_200k: Path, tmp_path: Path, mode: str) -> None:
    args = ["check", str(rows_200k)] + (["--json"] if mode == "json" else [])
    result: dict[str, Any] = {}

    def once() -> None:
        result.update(_run(args, tmp_path, tty_stderr=mode == "table"))

    benchmark.pedantic(once, rounds=1, iterations=1)
    benchmark.extra_info.update(rows=200_000, mode=mode, wall_s=result["wall_s"], peak_mb=result["peak_mb"])
    print(f"\ncheck {mode} 200k rows: {result['wall_s']} s, peak {result['peak_mb']} MB")
    assert result["code"] == 0, result["stderr"][-2000:]
    assert result["peak_mb"] < 500  # memory, not time: the rows are never held as dicts or one string
    if mode == "json":
        with open(result["stdout"]) as f:
            doc = json.load(f)
        assert len(doc["rows"]) == 200_000 and doc["summary"]["overall"]["rows"] == 200_000
    else:
        with open(result["stdout"]) as f:
            assert sum(1 for _ in f) > 200_000
        # a terminal on stderr: rich.progress's bar, redrawn over itself (carriage return, erase line), then on
        # closing the cursor shown again and the bar's line erased (transient)
        err = result["stderr"]
        assert "\r\x1b[2Kadvisor check: " in err and ("advisor check: reading rows" in err
                                                        or "advisor check: predicting" in err)
        assert "\x1b[?25h" in err and err.endswith("\x1b[2K")


def test_no_progress_bar_without_a_terminal(rows_200k: Path, tmp_path: Path) -> None:
    r = _run(["check", str(rows_200k), "--summary"], tmp_path)
    assert r["code"] == 0 and r["stderr"] == ""
