"""The small Parquet IO layer: where each table lives and atomic writes.

Every write goes to a temporary file in the same folder and is renamed into place, so a reader
(or a crash) only ever sees the old file or the new one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import polars as pl


def file_key(rel_path: str) -> str:
    """Stable, filesystem-safe name for the parts derived from one raw file."""
    return hashlib.sha256(rel_path.encode()).hexdigest()[:24]


def write_parquet_atomic(frame: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        frame.write_parquet(tmp, compression="zstd", statistics=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_file(path: Path) -> None:
    path.unlink(missing_ok=True)


def scan_parts(folder: Path, schema: pl.Schema) -> pl.LazyFrame:
    """All Parquet parts of a table as one LazyFrame; an empty frame with `schema` when none."""
    parts = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not parts:
        return pl.DataFrame(schema=schema).lazy()
    return pl.scan_parquet(parts, schema=schema)


def read_table(path: Path, schema: pl.Schema | None = None) -> pl.DataFrame:
    if not path.exists():
        if schema is None:
            raise FileNotFoundError(path)
        return pl.DataFrame(schema=schema)
    return pl.read_parquet(path)


def replace_dir_atomic(staging: Path, target: Path) -> None:
    """Swap a fully written folder into place (old one removed after the rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.with_name(f".{target.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    if old.exists():
        shutil.rmtree(old)
