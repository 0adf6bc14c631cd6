"""Local writes that survive a crash or a power loss: a temporary file beside the target, fsynced
and renamed onto it, then its folder fsynced (files.py writes through it, and objects.py's local
compare-and-swap, which files.py's remote writes use in turn)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def fsync_path(path: Path) -> None:
    """Flush a file's (or a folder's entries') data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """fsync every file and folder under `folder` (deepest first), and `folder` itself."""
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if not path.is_symlink():
            fsync_path(path)
    fsync_path(folder)


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary file beside `path`, fsynced and renamed onto it (then the folder fsynced) when
    the block succeeds, removed if not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        fsync_path(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(path.parent)
