"""The small Parquet IO layer: atomic, durable writes (tables: pipelines/storage/tables.py).

Every write goes to a temporary file in the same folder, is fsynced and renamed into place, and
then the folder is fsynced (durable.py): a reader, a killed process or a power loss only ever finds
the old file or the complete new one (the rename is on disk once the function returns).

On object storage (a path under an `s3://` data root, pipelines/storage/uri.py) there is no
rename and no need for one: one PUT (or a completed multipart upload) is atomic, so the same
functions write the object directly.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.storage.durable import atomic_path
from pipelines.storage.uri import is_remote, storage_options


def write_parquet_atomic(frame: pl.DataFrame, path: Path) -> None:
    if is_remote(path):
        options = storage_options(path)
        frame.write_parquet(str(path), compression="zstd", statistics=True, storage_options=options)
        return
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp, compression="zstd", statistics=True)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    if is_remote(path):
        from pipelines.storage.objects import ObjectRoot, put_bytes

        folder, _, name = str(path).rpartition("/")
        put_bytes(ObjectRoot.parse(folder), name, data)
        return
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def remove_file(path: Path) -> None:
    path.unlink(missing_ok=True)


def read_table(path: Path, schema: pl.Schema | None = None) -> pl.DataFrame:
    if not path.exists():
        if schema is None:
            raise FileNotFoundError(path)
        return pl.DataFrame(schema=schema)
    if is_remote(path):
        return pl.read_parquet(str(path), storage_options=storage_options(path))
    return pl.read_parquet(path)


def _polars_paths(paths: Path | Sequence[Path]) -> tuple[Any, dict[str, Any]]:
    """Paths as Polars takes them: local ones unchanged; remote ones as URI strings, with the
    storage options of their store."""
    many = not isinstance(paths, str | os.PathLike) and not is_remote(paths)
    listed = list(paths) if many else [paths]  # type: ignore[list-item]
    remote = [p for p in listed if is_remote(p)]
    if not remote:
        return paths, {}
    text = [str(p) for p in listed]
    return (text if many else text[0]), {"storage_options": storage_options(remote[0])}


def scan_parquet(paths: Path | Sequence[Path], **kwargs: Any) -> pl.LazyFrame:
    """`pl.scan_parquet` for local files or objects under a remote data root."""
    source, options = _polars_paths(paths)
    return pl.scan_parquet(source, **kwargs, **options)


def read_parquet(paths: Path | Sequence[Path], **kwargs: Any) -> pl.DataFrame:
    """`pl.read_parquet` for local files or objects under a remote data root."""
    source, options = _polars_paths(paths)
    return pl.read_parquet(source, **kwargs, **options)


def append_bytes(path: Path, data: bytes) -> None:
    """Append to a small log file; an object (no append on S3) is rewritten whole, which is
    safe because its writers hold the data-root lock."""
    if is_remote(path):
        old = path.read_bytes() if path.exists() else b""
        write_bytes_atomic(path, old + data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as fh:
        fh.write(data)
