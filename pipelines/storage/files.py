"""The small Parquet IO layer: atomic, durable writes (tables: pipelines/storage/tables.py).

Every write goes to a temporary file in the same folder, is fsynced and renamed into place, and
then the folder is fsynced: a reader, a killed process or a power loss only ever finds the old file
or the complete new one (the rename is on disk once the function returns).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl


def fsync_path(path: Path) -> None:
    """Flush a file's (or a folder's entries') data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file_and_dir(path: Path) -> None:
    """Make `path` survive a power loss: its bytes, then its entry in its folder."""
    fsync_path(path)
    fsync_path(path.parent)


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


def write_parquet_atomic(frame: pl.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp, compression="zstd", statistics=True)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def remove_file(path: Path) -> None:
    path.unlink(missing_ok=True)


def read_table(path: Path, schema: pl.Schema | None = None) -> pl.DataFrame:
    if not path.exists():
        if schema is None:
            raise FileNotFoundError(path)
        return pl.DataFrame(schema=schema)
    return pl.read_parquet(path)
