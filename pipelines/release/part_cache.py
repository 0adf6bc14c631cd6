"""A content-addressed store of per-partition release work, under `<data root>/.turnlake/`.

An entry is a folder named by the digest of everything its frames are a function of (the caller
computes it), holding one Parquet file per frame and `meta.json`. An entry is written into a
temporary folder and renamed into place, so a reader sees a whole entry or none. The store holds
subject data (built datasets before privatization), so it lives beside silver, never in a release;
`prune` keeps only the entries the last release used and `clear` empties it (`turnlake forget`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import orjson
import polars as pl

from pipelines.storage.layout import Layout

CACHE_DIR = "release-parts"
META = "meta.json"


def cache_root(layout: Layout) -> Path | None:
    """Where entries live: under `.turnlake/`, or for a remote data root under its local cache
    folder on this machine (entries are rebuilt where they are missing)."""
    state = layout.local / ".turnlake" if layout.is_remote else layout.state
    return state / CACHE_DIR


def load(root: Path | None, key: str, names: Iterable[str] | None = None) -> tuple[dict, dict]:
    """(meta, frames) of entry `key` (only the frames `names`, all when None); ({}, {}) when
    absent."""
    folder = root / key if root is not None else None
    if folder is None or not (folder / META).exists():
        return {}, {}
    meta = orjson.loads((folder / META).read_bytes())
    wanted = meta["frames"] if names is None else [n for n in names if n in meta["frames"]]
    return meta, {name: pl.read_parquet(folder / f"{name}.parquet") for name in wanted}


def has(root: Path | None, key: str) -> bool:
    return root is not None and (root / key / META).exists()


def frame_path(root: Path, key: str, name: str) -> Path:
    return root / key / f"{name}.parquet"


def save(root: Path | None, key: str, meta: dict, frames: Mapping[str, pl.DataFrame]) -> None:
    """Store an entry (a no-op when the store is off or the entry exists)."""
    if root is None or has(root, key):
        return
    tmp = root / f".tmp-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, frame in frames.items():
        frame.write_parquet(tmp / f"{name}.parquet", compression="zstd", statistics=False)
    entry = meta | {"frames": sorted(frames)}
    (tmp / META).write_bytes(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))
    try:
        os.rename(tmp, root / key)
    except OSError:  # another writer stored the same entry first: same content
        shutil.rmtree(tmp, ignore_errors=True)


def update_meta(root: Path | None, key: str, changes: dict) -> None:
    if root is None or not has(root, key):
        return
    path = root / key / META
    meta = orjson.loads(path.read_bytes()) | changes
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_bytes(orjson.dumps(meta, option=orjson.OPT_SORT_KEYS))
    os.replace(tmp, path)


def discard(root: Path | None, key: str) -> None:
    """Remove entry `key` (one that must be made again)."""
    if root is not None:
        shutil.rmtree(root / key, ignore_errors=True)


def prune(root: Path | None, keep: Iterable[str]) -> None:
    """Remove every entry but `keep` (and abandoned temporary folders)."""
    if root is None or not root.is_dir():
        return
    kept = set(keep)
    for folder in root.iterdir():
        if folder.name not in kept:
            shutil.rmtree(folder, ignore_errors=True)


def clear(layout: Layout) -> None:
    """Empty the store: it holds rows a `forget` must erase."""
    root = cache_root(layout)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(root.parent / "release-stage", ignore_errors=True)  # partitioned.STAGE_DIR
