"""The files of a release built from partitioned tables: one Parquet file per (dataset, split, file
slice), a slice being the partitions of one landing batch and split whose shards share a file
(staged.py), so a release after new raw files adds the new batch's files and rewrites only the
files whose partitions changed; a file whose rows equal the previous release's file of the same
name is hard-linked from it instead of written, and a slice whose inputs (`slice_inputs`: its
partitions' privatized files and kept rows) equal those the previous release recorded is not put
in order again: its files are hard-linked and counted from the figures stored when they were
written (reused_slices.py).

A file's `rows_digest` covers its rows in order and its schema: equal digests, equal bytes (the
same Polars writes the same rows the same way). The content hash sums every row's hash per
(dataset, split), so it does not depend on how rows fell into batches: the same rows give the same
hash whether they arrived in one build or in ten (and with 1 or 8 shards).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from pipelines.release.store.files import complete_releases, read_manifest
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part

_SEEDS = (0x72656C65617365, 0x626174636866)  # fixed: digests compare across releases
_MASK = (1 << 64) - 1


def _row_hashes(frame: pl.DataFrame) -> list[pl.Series]:
    return [frame.hash_rows(seed) for seed in _SEEDS]


def _schema(frame: pl.DataFrame) -> str:
    return json_part([[c, str(t)] for c, t in frame.schema.items()]).decode()


def rows_digest(frame: pl.DataFrame) -> str:
    """Digest of the rows in order and the schema (what decides a file's bytes)."""
    return hashed_rows(frame).rows_digest


class HashedRows(NamedTuple):
    """A file's rows as the content hash and the reuse of files see them, hashed once."""

    schema: str  # as the content-hash sums key it
    rows: int
    sums: tuple[int, int]  # of every row's two hashes, mod 2**64
    rows_digest: str  # `rows_digest`


def hashed_rows(frame: pl.DataFrame) -> HashedRows:
    schema = _schema(frame)
    digest = hashlib.sha256(f"{pl.__version__}\0{schema}".encode())
    sums = []
    for hashes in _row_hashes(frame):
        values = hashes.to_numpy()
        digest.update(values.tobytes())
        sums.append(int(values.sum(dtype=np.uint64)) & _MASK)
    return HashedRows(schema, frame.height, (sums[0], sums[1]), digest.hexdigest())


Totals = dict[tuple[str, str, str], list[int]]


def add_to_totals(totals: Totals, name: str, split: str, part: pl.DataFrame) -> None:
    """Count one file's rows into the content-hash sums of (dataset, split, schema)."""
    add_hashed(totals, name, split, hashed_rows(part))


def add_hashed(totals: Totals, name: str, split: str, hashed: HashedRows) -> None:
    """Count one file's hashed rows (`hashed_rows`) into the content-hash sums."""
    total = totals.setdefault((name, split, hashed.schema), [0, 0, 0])
    total[0] += hashed.rows
    for i, value in enumerate(hashed.sums, start=1):
        total[i] = (total[i] + value) & _MASK


def totals_hash(totals: Totals, config: dict) -> str:
    """Content hash of a partitioned release: per (dataset, split), its schema, row count and
    the sums (mod 2**64) of every row's two hashes, then the config (see the module doc)."""
    summary = [[*key, *value] for key, value in sorted(totals.items())]
    return fingerprint([pl.__version__, json_part(summary), json_part(config)])


class Previous(NamedTuple):
    """A file of the newest release: where it is, its rows' digest, its slice's inputs."""

    path: Path
    rows_digest: str
    inputs: str | None


def previous_files(exports: Path) -> dict[str, Previous]:
    """Relative path → Previous of the newest release that still holds its rows as
    written (a release rewritten by `turnlake forget` is not reused: its digests are stale)."""
    versions = complete_releases(exports) if exports.is_dir() else []
    if not versions:
        return {}
    release = exports / versions[-1]
    manifest = read_manifest(release)
    if "deletion_log" in manifest:
        return {}
    return {
        f["path"]: Previous(release / f["path"], f["rows_digest"], f.get("inputs"))
        for f in manifest["files"]
        if f.get("rows_digest")
    }


def write_or_link(
    part: pl.DataFrame,
    path: Path,
    rel: str,
    previous: dict[str, Previous],
    digest: str | None = None,
) -> tuple[str, bool]:
    """Write `part` to `path`, or hard-link the previous release's file of the same name when its
    rows are the same; (rows_digest, whether it was reused). `digest`: the rows' digest, when the
    caller hashed them already."""
    digest = digest or rows_digest(part)
    old = previous.get(rel)
    if old is not None and old.rows_digest == digest and linked(old.path, path):
        return digest, True
    part.write_parquet(path, compression="zstd", statistics=True)
    return digest, False


def linked(old: Path, path: Path) -> bool:
    """Whether `path` is now a hard link of `old`."""
    try:
        os.link(old, path)
        return True
    except OSError:  # gone, another file system, or links not supported: write it
        return False


def slice_inputs(
    name: str, cut: str, schema: pl.Schema, identities: list[str | None]
) -> str | None:
    """What a slice's files are a function of: the dataset, the slice, its schema, its partitions'
    inputs in order (None when one of them has no identity: the slice is always put in order) and
    the engine digest (the code and libraries that order and write them)."""
    if any(identity is None for identity in identities):
        return None
    columns = json_part([[c, str(t)] for c, t in schema.items()])
    parts = [engine_digest(), name, cut, columns, *identities]
    return fingerprint(parts)  # type: ignore[arg-type]
