"""The small Parquet IO layer: where each table lives and atomic writes.

Every write goes to a temporary file in the same folder and is renamed into place, so a reader
(or a crash) only ever sees the old file or the new one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import polars as pl


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary file beside `path`, renamed onto it when the block succeeds, removed if not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def publish_generation(
    link: Path,
    generation: str,
    tables: dict[str, pl.DataFrame],
    markers: dict[str, str] | None = None,
) -> Path:
    """Write a set of tables as one new generation folder, then switch `link` to it atomically.

    `link` (e.g. warehouse/silver) is a symlink to `<link>.<generation>/`; replacing a symlink is a
    single rename, so readers see the whole old set or the whole new set, never a mix.
    """
    target = link.with_name(f"{link.name}.{generation}")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for table, frame in tables.items():
        write_parquet_atomic(frame, target / f"{table}.parquet")
    for name, text in (markers or {}).items():
        (target / name).write_text(text)
    if link.exists() and not link.is_symlink():  # a plain folder from an older layout
        os.replace(link, link.with_name(f"{link.name}.legacy"))
    tmp_link = link.with_name(f".{link.name}.link.tmp")
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(target.name)
    os.replace(tmp_link, link)
    return target


INPUTS_MARKER = (
    "_inputs.sha256"  # beside a generation's tables: the digest of what they were built from
)


def published_inputs(link: Path) -> str | None:
    """The inputs digest of the generation `link` points to (None if none is published)."""
    marker = link / INPUTS_MARKER
    return marker.read_text() if marker.exists() else None


def module_files(module: ModuleType) -> list[Path]:
    """The source files of a module; a package counts all its files."""
    path = Path(module.__file__ or "")
    return sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]


def code_digest(*roots: Path) -> str:
    """Digest of the Python source under `roots` (files or folders): code that shapes a table."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted([root] if root.is_file() else root.rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def remove_old_generations(link: Path) -> list[Path]:
    """Delete generation folders of `link` other than the one it points to."""
    current = link.resolve() if link.is_symlink() else None
    removed = []
    for folder in link.parent.glob(f"{link.name}.*"):
        if folder.is_dir() and not folder.is_symlink() and folder.resolve() != current:
            shutil.rmtree(folder)
            removed.append(folder)
    return removed
