"""Where a release's files live and how a dataset is laid out on disk."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import orjson
import polars as pl

from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.layout import LATEST
from pipelines.storage.uri import is_remote

MANIFEST = "manifest.json"
CARD = "README.md"
SPLIT_PROOF = "split_proof.json"
LEDGER = "redaction_ledger.json"
SHARD_ROWS = 200_000  # rows per Parquet shard; bigger splits are written as several files
SPLIT_ORDER = ("train", "validation", "test")
# Partitions (shards of one landing batch and split) that share a release file: files of a few MB
# at the default partition size, and a change to one partition rewrites the files of 4
# (build/staged.py)
PARTITIONS_PER_FILE = 4
_VERSION = re.compile(r"^\d{8}-[0-9a-f]{10}$")


def is_version(name: str) -> bool:
    return bool(_VERSION.match(name))


def split_files(frame: pl.DataFrame, split: str) -> list[tuple[str, pl.DataFrame]]:
    """A release profile's files (write.py; a dataset's are cut by landing batch,
    build/batch_sort.py): `<split>.parquet`, or `<split>-00000-of-00003.parquet` shards when
    large."""
    if frame.height <= SHARD_ROWS:
        return [(f"{split}.parquet", frame)]
    n = -(-frame.height // SHARD_ROWS)
    return [
        (f"{split}-{i:05d}-of-{n:05d}.parquet", frame.slice(i * SHARD_ROWS, SHARD_ROWS))
        for i in range(n)
    ]


def read_manifest(release: Path) -> dict:
    return orjson.loads((release / MANIFEST).read_bytes())


def complete_releases(exports: Path) -> list[str]:
    """Versions whose manifest exists (a release without one is not a release), oldest first."""
    if not exports.is_dir():
        return []
    found = [p for p in exports.iterdir() if is_version(p.name) and (p / MANIFEST).exists()]
    return [p.name for p in sorted(found, key=lambda p: (_created_at(p), p.name))]


def _created_at(release: Path) -> str:
    """The manifest's `created_at`. A manifest is written once (renamed into place), so a local
    one with the same stamps was read before: answered without parsing again (a manifest lists
    every raw file, 28 MB at 1 GB, and a build sorts its releases ~10 times)."""
    return _head(release)[0]


def manifest_counts(release: Path) -> dict[str, dict[str, int]]:
    """The manifest's `counts` (rows per dataset and split), kept with its `created_at`: the build
    report asks for the latest two releases' after the build sorted them, without parsing again."""
    return orjson.loads(_head(release)[1])


def manifest_content_hash(release: Path) -> str | None:
    """The manifest's `content_hash`, kept with its `created_at`: a new release looks for an
    identical one among those the build already sorted, without parsing them again."""
    return _head(release)[2]


def _head(release: Path) -> tuple[str, bytes, str | None]:
    if is_remote(release):
        return _head_of_manifest(read_manifest(release))
    info = (release / MANIFEST).stat()
    return _head_of(str(release), info.st_ino, info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=4096)
def _head_of(release: str, inode: int, size: int, mtime_ns: int) -> tuple[str, bytes, str | None]:
    return _head_of_manifest(read_manifest(Path(release)))


def _head_of_manifest(manifest: dict) -> tuple[str, bytes, str | None]:
    return (
        manifest["created_at"],
        orjson.dumps(manifest.get("counts", {})),
        manifest.get("content_hash"),
    )


def is_as_of(manifest: dict) -> bool:
    """A release built from past table versions (`release --as-of`): never made LATEST."""
    return bool(manifest.get("as_of"))


def newest_current(versions: list[str], manifest_of: Callable[[str], dict]) -> str | None:
    """The newest of `versions` (oldest first) that is not an as-of release, else the newest."""
    current = [v for v in versions if not is_as_of(manifest_of(v))]
    return (current or versions or [None])[-1]


def latest_release(exports: Path) -> str | None:
    pointer = exports / LATEST
    versions = complete_releases(exports)
    if pointer.exists():
        name = pointer.read_text().strip()
        if name in versions:
            return name
    return newest_current(versions, lambda v: read_manifest(exports / v))


def point_latest(exports: Path, version: str) -> None:
    write_bytes_atomic(exports / LATEST, f"{version}\n".encode())


def split_counts(release: Path, files: list[dict], folder: str) -> dict[str, int]:
    """Rows per split of the Parquet files under `folder/` of a release, read from their `split`
    column (what the manifest's `counts` must say); a split whose files hold no row, by the split
    its file names start with (`test-empty.parquet`: test 0)."""
    counts: dict[str, int] = {}
    for entry in files:
        if entry["path"].startswith(f"{folder}/") and entry["path"].endswith(".parquet"):
            named = entry["path"].rsplit("/", 1)[1].removesuffix(".parquet").split("-", 1)[0]
            counts.setdefault(named, 0)
            split = pl.read_parquet(release / entry["path"], columns=["split"])
            for value, n in split.group_by("split").len().iter_rows():
                counts[value] = counts.get(value, 0) + n
    return counts


def manifest_folders(manifest: dict) -> dict[str, str]:
    """Every config of a release → its folder: the datasets, then the profiles
    (card/profiles.py)."""
    profiles = manifest.get("profiles") or {}
    return {name: name for name in manifest["counts"]} | {
        name: entry["path"] for name, entry in profiles.items()
    }
