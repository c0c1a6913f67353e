"""advisor.files: atomic output leaves the old file or the whole new one, never a part, and no temp file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.files import atomic_output, write_atomic


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_write_atomic_writes_text_as_utf8_and_bytes_as_given(tmp_path: Path) -> None:
    text, raw = tmp_path / "a.txt", tmp_path / "b.bin"
    write_atomic(text, "µs per step\n")
    write_atomic(raw, b"\x00\xff")
    assert text.read_bytes() == "µs per step\n".encode()
    assert raw.read_bytes() == b"\x00\xff"
    assert _listing(tmp_path) == ["a.txt", "b.bin"]


@pytest.mark.parametrize("error", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_a_writer_that_fails_midway_leaves_the_target_untouched(tmp_path: Path, error: BaseException) -> None:
    target = tmp_path / "cal.json"
    target.write_text('{"old": true}\n')
    with pytest.raises(type(error)), atomic_output(target) as handle:
        handle.write('{"new": ')
        handle.flush()  # the half-written bytes really are on disk, in the temp file
        assert len(_listing(tmp_path)) == 2
        raise error
    assert target.read_text() == '{"old": true}\n'
    assert _listing(tmp_path) == ["cal.json"]


def test_a_failed_first_write_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValueError), atomic_output(tmp_path / "new.csv", newline="") as handle:
        handle.write("model,hardware\n")
        raise ValueError("bad row")
    assert _listing(tmp_path) == []


def test_permissions_follow_the_umask_or_the_replaced_file(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.json", "{}")
        assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o644  # not mkstemp's 0600
        script = tmp_path / "run.sh"
        script.write_text("#!/bin/sh\n")
        script.chmod(0o750)
        write_atomic(script, "#!/bin/sh\necho hi\n")
        assert stat.S_IMODE(script.stat().st_mode) == 0o750
    finally:
        os.umask(old)


def test_missing_directory_raises_and_writes_nothing(tmp_path: Path) -> None:
    # one line for the user (AdvisorError), not an OSError traceback
    with pytest.raises(AdvisorError, match=r"nope/x.txt: cannot write there \(No such file or directory\)"):
        write_atomic(tmp_path / "nope" / "x.txt", "x")
    assert _listing(tmp_path) == []


def test_a_directory_as_target_is_refused_and_kept(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(AdvisorError, match="out: is a directory"):
        write_atomic(tmp_path / "out", "x")
    assert _listing(tmp_path) == ["out"] and (tmp_path / "out").is_dir()
