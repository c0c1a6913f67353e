"""Atomic file output: write a temp file in the target's directory, then `os.replace` it over the target.

`os.replace` is a rename within one file system, atomic on POSIX and Windows, so a reader sees the old file or the
whole new one, never half of it; on any exception (KeyboardInterrupt included) the temp file is removed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from advisor.errors import AdvisorError


@contextmanager
def atomic_output(path: str | os.PathLike[str], mode: str = "w", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """A file object (text mode: UTF-8 unless `encoding=` is given) whose content replaces `path` on a clean exit.

    The directory must exist. The new file gets the old file's permissions, or the umask's default for a new
    one (mkstemp creates 0600, which would make every output private)."""
    target = Path(path)
    if "b" not in mode:
        open_kwargs.setdefault("encoding", "utf-8")
    name = str(target) if len(str(target)) <= 120 else f"{str(target)[:80]}... ({len(str(target))} characters)"
    try:
        if target.is_dir():
            raise AdvisorError(f"{name}: is a directory, give a file name to write")
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except (OSError, ValueError) as err:  # no such directory, no permission, a name the OS refuses
        raise AdvisorError(f"{name}: cannot write there ({getattr(err, 'strerror', None) or err})") from None
    try:
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            os.chmod(tmp, _mode_for(target))
            yield handle
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise AdvisorError(f"{target}: cannot write ({err.strerror or err})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write `data` (str as UTF-8, or bytes) to `path` atomically (see `atomic_output`)."""
    with atomic_output(path, "wb" if isinstance(data, bytes) else "w") as handle:
        handle.write(data)


def _mode_for(target: Path) -> int:
    """Permission bits for the new file: the existing target's, else 0o666 less the process umask."""
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)  # the only portable way to read it is to set it; put it straight back
        os.umask(umask)
        return 0o666 & ~umask
