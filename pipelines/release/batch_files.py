"""The files of a release built from partitioned tables: one Parquet file per (dataset, split,
landing batch), so a release after new raw files adds the new batch's files and rewrites only the
files whose rows changed; a file whose rows equal the previous release's file of the same name is
hard-linked from it instead of written.

A file's `rows_digest` covers its rows in order and its schema: equal digests, equal bytes (the
same Polars writes the same rows the same way). The content hash sums every row's hash per
(dataset, split), so it does not depend on how rows fell into batches: the same rows give the same
hash whether they arrived in one build or in ten (and with 1 or 8 shards).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import polars as pl

from pipelines.release.files import complete_releases, read_manifest
from pipelines.storage.fingerprint import fingerprint, json_part

_SEEDS = (0x72656C65617365, 0x626174636866)  # fixed: digests compare across releases
_MASK = (1 << 64) - 1


def _row_hashes(frame: pl.DataFrame) -> list[pl.Series]:
    return [frame.hash_rows(seed) for seed in _SEEDS]


def _schema(frame: pl.DataFrame) -> str:
    return json_part([[c, str(t)] for c, t in frame.schema.items()]).decode()


def rows_digest(frame: pl.DataFrame) -> str:
    """Digest of the rows in order and the schema (what decides a file's bytes)."""
    digest = hashlib.sha256(f"{pl.__version__}\0{_schema(frame)}".encode())
    for hashes in _row_hashes(frame):
        digest.update(hashes.to_numpy().tobytes())
    return digest.hexdigest()


Totals = dict[tuple[str, str, str], list[int]]


def add_to_totals(totals: Totals, name: str, split: str, part: pl.DataFrame) -> None:
    """Count one file's rows into the content-hash sums of (dataset, split, schema)."""
    total = totals.setdefault((name, split, _schema(part)), [0, 0, 0])
    total[0] += part.height
    for i, hashes in enumerate(_row_hashes(part), start=1):
        total[i] = (total[i] + int(hashes.to_numpy().sum(dtype=np.uint64))) & _MASK


def totals_hash(totals: Totals, config: dict) -> str:
    """Content hash of a partitioned release: per (dataset, split), its schema, row count and
    the sums (mod 2**64) of every row's two hashes, then the config (see the module doc)."""
    summary = [[*key, *value] for key, value in sorted(totals.items())]
    return fingerprint([pl.__version__, json_part(summary), json_part(config)])


def previous_files(exports: Path) -> dict[str, tuple[Path, str]]:
    """Relative path → (file, rows_digest) of the newest release that still holds its rows as
    written (a release rewritten by `turnlake forget` is not reused: its digests are stale)."""
    versions = complete_releases(exports) if exports.is_dir() else []
    if not versions:
        return {}
    release = exports / versions[-1]
    manifest = read_manifest(release)
    if "deletion_log" in manifest:
        return {}
    return {
        f["path"]: (release / f["path"], f["rows_digest"])
        for f in manifest["files"]
        if f.get("rows_digest")
    }


def write_or_link(
    part: pl.DataFrame, path: Path, rel: str, previous: dict[str, tuple[Path, str]]
) -> tuple[str, bool]:
    """Write `part` to `path`, or hard-link the previous release's file of the same name when its
    rows are the same; (rows_digest, whether it was reused)."""
    digest = rows_digest(part)
    old = previous.get(rel)
    if old is not None and old[1] == digest and old[0].exists():
        try:
            os.link(old[0], path)
            return digest, True
        except OSError:  # another file system, or links not supported: write it
            pass
    part.write_parquet(path, compression="zstd", statistics=True)
    return digest, False
