"""Bronze storage: every bronze table (and each source's parse quarantine) is a Delta table
partitioned by part id, and each source's ingest log is a small Delta table.

A part (the rows one ingest batch wrote for one table) is one partition, written by one Delta
commit that replaces the partition of that id (so writing a part again after a killed build
replaces it instead of duplicating it). Which parts are current is said by the ingest log
(pipelines/ingest/log.py), whose Delta commit is the commit point of an ingest: a part no log
names is garbage, dropped by a Delta delete and vacuumed.

A big raw file parsed in parts (pipelines/ingest/split.py) has its rows in several partitions,
`<part id>.<k>` (k zero-padded, so sorting their files keeps the file's order): its part is the
union of them, read, replaced and dropped by the part id alone.

No values reach the Delta logs: tables are written without column statistics, the partition
values are part ids (hashes of file names), and garbage is deleted by partition predicates over
those ids. Vacuuming with no retention therefore leaves no trace of deleted rows (`forget`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from urllib.parse import unquote

import polars as pl
from deltalake import DeltaTable

from pipelines.storage import delta_cache
from pipelines.storage.delta_writes import file_paths, overwrite_whole
from pipelines.storage.durable import fsync_path
from pipelines.storage.tables import PARTITION, commit_partitions
from pipelines.storage.uri import is_remote


def _open(uri: str, options: dict[str, str] | None) -> DeltaTable | None:
    return delta_cache.latest(uri, options)


def exists(uri: str, options: dict[str, str] | None = None) -> bool:
    return DeltaTable.is_deltatable(uri, storage_options=options)


def _version(uri: str, options: dict[str, str] | None) -> int:
    delta = _open(uri, options)
    return -1 if delta is None else delta.version()


SUBPART = "."  # `<part id>.<k>`: the k-th partition of a part written in several (no hex digit)


def subpart(part_id: str, index: int) -> str:
    """The partition holding the `index`-th piece of part `part_id`."""
    return f"{part_id}{SUBPART}{index:06d}"  # sorts as numbers up to 3 × 333 333 parts


def write_part(uri: str, frame: pl.DataFrame, part_id: str, options: dict[str, str] | None) -> int:
    """Commit `frame` as the part `part_id` (replacing a partition of that id; a `subpart` id
    replaces that piece alone); the version."""
    tagged = frame.with_columns(pl.lit(part_id, pl.String).alias(PARTITION))
    before = _version(uri, options)
    version = commit_partitions(uri, tagged, [part_id], options)
    if not is_remote(uri):
        delta = _open(uri, None)
        files = [] if delta is None else _files_by_partition(delta).get(part_id, [])
        _make_durable(uri, files, before, version)
    return version


def _make_durable(uri: str, files: list[str], before: int, after: int) -> None:
    """fsync a local commit (delta-rs does not): its data files, the Delta log's files of the
    versions after `before` up to `after` (a concurrent worker may have committed in between, so
    this one is among them; checkpoints included) and their folders, so a power loss cannot
    leave a commit the ingest log relies on half written."""
    table = Path(uri)
    log = table / "_delta_log"
    written = [log / name for name in log_files_committed(os.listdir(log), before, after)]
    for path in [*(Path(f) for f in files), *written]:
        fsync_path(path)
    for folder in {*(Path(f).parent for f in files), log, table}:
        fsync_path(folder)


# A Delta log's commit and checkpoint files (`<version>.json`, `<version>.checkpoint.parquet`,
# `<version>.checkpoint.<part>.<parts>.parquet`); not a concurrent writer's staging file, which the
# local object store names `<target>#<n>` and renames or removes while this lists the folder.
_LOG_FILE = re.compile(r"(\d{20})\.(?:json|checkpoint(?:\.\d+\.\d+)?\.parquet)")


def log_files_committed(names: Iterable[str], before: int, after: int) -> list[str]:
    """Of a `_delta_log` folder's file names, those of the versions after `before` up to `after`,
    and `_last_checkpoint`."""
    return [
        name
        for name in names
        if name == "_last_checkpoint"
        or ((found := _LOG_FILE.fullmatch(name)) and before < int(found[1]) <= after)
    ]


def partition_of(path: str | PathLike[str]) -> str:
    """The partition value of one of a bronze table's files (its partition folder)."""
    return unquote(str(path).rsplit(f"/{PARTITION}=", 1)[1].split("/", 1)[0])


def part_of(path: str | PathLike[str]) -> str:
    """The part id of one of a bronze table's files (a `subpart`'s is its part's)."""
    return partition_of(path).split(SUBPART, 1)[0]


def _files_by_partition(delta: DeltaTable) -> dict[str, list[str]]:
    """The current files of each partition; local ones as plain paths (delta-rs
    percent-encodes)."""
    out: dict[str, list[str]] = {}
    for path in file_paths(delta):
        out.setdefault(partition_of(path), []).append(path)
    return out


def _files_by_part(delta: DeltaTable) -> dict[str, list[str]]:
    """The current files of each part (of all its `subpart`s)."""
    out: dict[str, list[str]] = {}
    for path in file_paths(delta):
        out.setdefault(part_of(path), []).append(path)
    return out


def part_files(uri: str, part_ids: Iterable[str], options: dict[str, str] | None) -> list[str]:
    """The Parquet files holding the given parts, sorted (a part missing from the table has
    none: lost outside turnlake, which the reconciliation then reports)."""
    delta = _open(uri, options)
    if delta is None:
        return []
    by_part = _files_by_part(delta)
    return sorted(f for part in set(part_ids) for f in by_part.get(part, ()))


def drop_parts_except(uri: str, keep: Iterable[str], options: dict[str, str] | None) -> int:
    """Delete every part not in `keep` (one Delta commit, removes only), then vacuum with no
    retention: files of deleted parts, of replaced parts and of killed writes go; the count of
    parts deleted."""
    delta = _open(uri, options)
    if delta is None:
        return 0
    kept = set(keep)
    partitions = _files_by_partition(delta)
    gone = sorted(p for p in partitions if p.split(SUBPART, 1)[0] not in kept)
    if gone:
        keys = ", ".join("'" + key.replace("'", "''") + "'" for key in gone)
        delta.delete(f"{PARTITION} IN ({keys})")
    vacuum(delta)
    return len({p.split(SUBPART, 1)[0] for p in gone})


def vacuum(delta: DeltaTable) -> list[str]:
    """Remove every file the current version does not read (no time travel is kept: readers go
    through the ingest log, and `forget` needs deleted rows gone from every version)."""
    return delta_cache.vacuum_table(
        delta, retention_hours=0, dry_run=False, enforce_retention_duration=False, full=True
    )


def write_table(uri: str, frame: pl.DataFrame, options: dict[str, str] | None) -> None:
    """Replace the whole (unpartitioned) table by `frame` in one commit."""
    before = _version(uri, options)
    after = overwrite_whole(uri, frame, options)
    if not is_remote(uri):
        _make_durable(uri, file_paths(delta_cache.existing(uri, options)), before, after)


def read_table(uri: str, schema: pl.Schema, options: dict[str, str] | None) -> pl.DataFrame:
    """The current version of a table; an empty frame of `schema` when there is none."""
    delta = _open(uri, options)
    if delta is None:
        return pl.DataFrame(schema=schema)

    def read() -> pl.DataFrame:
        paths = file_paths(delta)
        if not paths:
            return pl.scan_delta(delta).collect()
        return pl.read_parquet(paths, storage_options=options)

    return delta_cache.read_once(uri, delta.version(), read)


def vacuum_table(uri: str, options: dict[str, str] | None) -> None:
    delta = _open(uri, options)
    if delta is not None:
        vacuum(delta)
