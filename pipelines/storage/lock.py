"""One writer per data root: builds take an exclusive lock so writes never interleave.

The lock is re-entrant within a process (the CLI holds it around the Dagster run, and the assets
of that run take it again), and released by the OS if the holder dies, so a killed build never
leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HELD: dict[str, tuple[int, int]] = {}  # lock path -> (fd, depth) held by this process


class DataRootBusy(RuntimeError):
    """Another build holds the data root."""


def lock_path(data_root: Path) -> Path:
    return data_root / ".turnlake.lock"


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


@contextmanager
def data_root_lock(data_root: Path, wait_seconds: float = 0.0, poll: float = 0.2) -> Iterator[None]:
    """Hold the data root exclusively; wait up to `wait_seconds`, then raise DataRootBusy."""
    path = lock_path(data_root)
    key = os.path.abspath(path)
    if key in _HELD:
        fd, depth = _HELD[key]
        _HELD[key] = (fd, depth + 1)
        try:
            yield
        finally:
            fd, depth = _HELD[key]
            _HELD[key] = (fd, depth - 1)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise DataRootBusy(
                    f"another turnlake build is writing to {data_root} ({_holder(path)}); "
                    "wait for it to finish or pass --wait SECONDS"
                ) from None
            time.sleep(poll)
    os.ftruncate(fd, 0)
    os.write(
        fd,
        f"pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n".encode(),
    )
    _HELD[key] = (fd, 1)
    try:
        yield
    finally:
        _, depth = _HELD[key]
        if depth <= 1:
            del _HELD[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        else:
            _HELD[key] = (fd, depth - 1)
