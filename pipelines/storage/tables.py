"""The one seam for silver, gold and splits tables: Delta Lake tables plus a snapshot log per layer.

Each table is a Delta table (`deltalake`) under `warehouse/tables/<layer>/<table>/`; publishing a
layer commits every table (an overwrite, one new Delta version each) and then atomically rewrites
the layer's snapshot log `warehouse/tables/<layer>/_snapshots.jsonl`, whose last line names the
Delta version of every table plus the layer's metadata (inputs digest, reward parameters, …) and
when it was published. Readers read the versions the log names, never "the newest Delta version",
so a crash between two table commits leaves the previous snapshot whole and readable; the earlier
lines are the history that `as_of` reads (a release as of a past time).

Tables are written without column statistics in the Delta log (`dataSkippingNumIndexedCols` 0),
so the log holds no values: once `forget` has overwritten the tables and vacuumed old files, no
file under the data root holds the subject. Paths go through `Layout`, so a URI can replace them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from pipelines.runtime.faults import crash_point
from pipelines.storage import delta_cache
from pipelines.storage.delta_writes import (  # noqa: F401 (commit_partitions: part of the seam)
    PARTITION,
    LayoutChanged,
    commit_partitions,
    file_paths,
    overwrite_whole,
)
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.fingerprint import sha256_file
from pipelines.storage.layout import Layout
from pipelines.storage.objects import read_file
from pipelines.storage.uri import sha256_object, storage_options

LAYERS = ("silver", "gold", "splits")
RETENTION_HOURS = 168  # old table versions stay readable (as-of releases) for a week
INPUTS = "inputs"  # snapshot metadata: the digest of what a layer was built from
RUN = "run"  # snapshot metadata: the run that published it
WHOLE = None  # `publish(partitions={table: WHOLE})`: rewrite every partition of the table
# The partition a table stored whole reads as: a key of the form partitions/assign.py gives
# (landing batch 0, shard 0), so whatever reads partitions reads it as one.
ONE_PARTITION = "b00000-whole-s00"


class TableVersionGone(RuntimeError):
    """A snapshot names a table version whose files were vacuumed (retention, or `forget`)."""


@dataclass(frozen=True)
class Snapshot:
    layer: str
    versions: dict[str, int]
    meta: dict[str, str] = field(default_factory=dict)
    published_at: str = ""

    def record(self) -> dict:
        return {"versions": self.versions, "meta": self.meta, "published_at": self.published_at}


def home_layer(layer: str, table: str) -> str:
    """Splits is listed among the gold models but is its own asset, so its own layer."""
    return "splits" if layer == "gold" and table == "splits" else layer


def table_uri(layout: Layout, layer: str, table: str) -> str:
    return str(layout.table_dir(home_layer(layer, table), table))


def _options(layout: Layout) -> dict[str, str] | None:
    """deltalake's and Polars' `storage_options` for the data root (None when it is local)."""
    return storage_options(layout.data_root)


def _log_path(layout: Layout, layer: str) -> Path:
    return layout.snapshot_log(layer)


def history(layout: Layout, layer: str) -> list[Snapshot]:
    """Every published snapshot of `layer`, oldest first (empty if none)."""
    try:  # one request on S3, not an existence check, a HEAD and a GET: every table read asks
        lines = read_file(_log_path(layout, layer)).splitlines()
    except FileNotFoundError:
        return []
    return [Snapshot(layer, **orjson.loads(line)) for line in lines if line]


def parse_time(value: str | datetime) -> datetime:
    """An ISO timestamp (naive means UTC) as an aware datetime; ValueError if it is not one."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def snapshot(layout: Layout, layer: str, as_of: datetime | None = None) -> Snapshot | None:
    """The snapshot in force now, or at `as_of` (the last published at or before it)."""
    entries = history(layout, layer)
    if as_of is not None:
        entries = [s for s in entries if parse_time(s.published_at) <= parse_time(as_of)]
    return entries[-1] if entries else None


def versions(layout: Layout, as_of: datetime | None = None) -> dict[str, dict[str, int]]:
    """Table versions per layer in force now or at `as_of` (what a release manifest records)."""
    found = {layer: snapshot(layout, layer, as_of) for layer in LAYERS}
    return {layer: s.versions for layer, s in found.items() if s is not None}


def meta(layout: Layout, layer: str, key: str, as_of: datetime | None = None) -> str | None:
    current = snapshot(layout, layer, as_of)
    return None if current is None else current.meta.get(key)


def exists(layout: Layout, layer: str, table: str, as_of: datetime | None = None) -> bool:
    current = snapshot(layout, home_layer(layer, table), as_of)
    return current is not None and table in current.versions


def _table(layout: Layout, layer: str, table: str, as_of: datetime | None) -> DeltaTable:
    current = snapshot(layout, home_layer(layer, table), as_of)
    if current is None or table not in current.versions:
        when = f" as of {as_of.isoformat()}" if as_of else ""
        raise FileNotFoundError(f"no {layer} table {table!r}{when}: run `turnlake build` first")
    version = current.versions[table]
    try:
        return delta_cache.pinned(table_uri(layout, layer, table), version, _options(layout))
    except DeltaError as exc:
        raise TableVersionGone(
            f"{layer}.{table} version {version} is no longer stored (vacuumed or forgotten)"
        ) from exc


def files(layout: Layout, layer: str, table: str, as_of: datetime | None = None) -> list[str]:
    """The Parquet files of the table's version in force (for DuckDB `read_parquet([...])`)."""
    uris = _file_paths(_table(layout, layer, table, as_of))
    missing = [u for u in uris if "://" not in u and not Path(u).exists()]
    if missing:
        raise TableVersionGone(f"{layer}.{table}: files of this version were vacuumed")
    return sorted(uris)


def content_digest(layout: Layout, layer: str, table: str, as_of: datetime | None = None) -> str:
    """The bytes of the table's files in force (not their names or the version): a table
    republished with the same content has the same digest; "absent" when there is none."""
    if not exists(layout, layer, table, as_of):
        return "absent"
    digest = sha256_object if layout.is_remote else (lambda f: sha256_file(Path(f)))
    return ",".join(sorted(digest(f) for f in files(layout, layer, table, as_of)))


def _file_paths(delta: DeltaTable) -> list[str]:
    return file_paths(delta)


def _by_partition(paths: list[str]) -> list[str]:
    """Files in partition-key order, each partition's in Delta's (write) order: a partition is
    always rewritten whole, so the rows read are in the same order whichever partitions the
    builds before happened to rewrite."""
    marker = f"/{PARTITION}="
    return sorted(
        paths, key=lambda p: p.rsplit(marker, 1)[1].split("/", 1)[0] if marker in p else ""
    )


def _in_partitions(paths: list[str], partitions: Iterable[str], split_up: bool) -> list[str]:
    if not split_up:  # a table stored whole is one partition
        return paths if ONE_PARTITION in set(partitions) else []
    wanted = {f"/{PARTITION}={key}/" for key in partitions}
    return [p for p in paths if any(w in p for w in wanted)]


def scan(
    layout: Layout,
    layer: str,
    table: str,
    as_of: datetime | None = None,
    *,
    partitions: Iterable[str] | None = None,
    with_partition: bool = False,
    newest: bool = False,
) -> pl.LazyFrame:
    """The table in force (or at `as_of`, or its newest version, published or not, when
    `newest`); only the given partitions of a partitioned table, and
    its `_partition` column only when `with_partition` (a partitioned table reads as it would
    unpartitioned: the partition is in the file path, not in the files). A table stored whole
    (one not keyed by episode, or one an earlier version stored whole) is the one partition
    ONE_PARTITION."""
    if newest:  # what partition runs committed beyond the snapshot too
        delta = delta_cache.existing(table_uri(layout, layer, table), _options(layout))
    else:
        delta = _table(layout, layer, table, as_of)
    split_up = PARTITION in delta.metadata().partition_columns
    paths = _by_partition(_file_paths(delta))
    if partitions is not None:
        paths = _in_partitions(paths, partitions, split_up)
    # The same frame as scan_delta (same files, same types: checked table by table), but found
    # under any data root path; a table without files is Delta's own typed empty read.
    if paths:
        frame = pl.scan_parquet(
            paths, hive_partitioning=with_partition and split_up, storage_options=_options(layout)
        )
    else:
        frame = pl.scan_delta(delta).head(0)
        frame = frame.drop(PARTITION) if split_up and not with_partition else frame
    has_column = PARTITION in {f.name for f in delta.schema().fields}  # a digests table has
    if with_partition and not split_up and not has_column:
        frame = frame.with_columns(pl.lit(ONE_PARTITION, pl.String).alias(PARTITION))
    return frame


def scan_by_partition(
    layout: Layout, layer: str, table: str, as_of: datetime | None = None
) -> list[pl.LazyFrame]:
    """The table in force (or at `as_of`) as one scan per partition, in partition-key order (a
    table stored whole is one): for work whose rows group within a partition, done a partition
    at a time so that only one partition's rows are held."""
    delta = _table(layout, layer, table, as_of)
    paths = _by_partition(_file_paths(delta))
    if PARTITION not in delta.metadata().partition_columns or not paths:
        return [scan(layout, layer, table, as_of)]
    by_key: dict[str, list[str]] = {}
    for path in paths:
        by_key.setdefault(path.rsplit(f"/{PARTITION}=", 1)[1].split("/", 1)[0], []).append(path)
    options = _options(layout)
    return [pl.scan_parquet(files, storage_options=options) for files in by_key.values()]


def partitioned(layout: Layout, layer: str, table: str) -> bool:
    """Whether the table in force is stored in partitions."""
    return PARTITION in _table(layout, layer, table, None).metadata().partition_columns


def read(
    layout: Layout,
    layer: str,
    table: str,
    as_of: datetime | None = None,
    schema: pl.Schema | None = None,
    *,
    partitions: Iterable[str] | None = None,
    with_partition: bool = False,
    newest: bool = False,
) -> pl.DataFrame:
    """The table as of the snapshot in force (`newest`: see `scan`); an empty frame of `schema`
    when it does not exist and a schema is given."""
    if schema is not None and not exists(layout, layer, table, as_of):
        return pl.DataFrame(schema=schema)
    # FileNotFoundError: no such table
    lazy = scan(
        layout,
        layer,
        table,
        as_of,
        partitions=partitions,
        with_partition=with_partition,
        newest=newest,
    )
    try:
        return lazy.collect()
    except (OSError, DeltaError, pl.exceptions.ComputeError) as exc:
        raise TableVersionGone(f"{layer}.{table} cannot be read: {exc}") from exc


def rows(layout: Layout, layer: str, table: str) -> int:
    return scan(layout, layer, table).select(pl.len()).collect().item()


def publish(
    layout: Layout,
    layer: str,
    frames: Mapping[str, pl.DataFrame],
    meta: Mapping[str, str] | None = None,
    *,
    partitions: Mapping[str, Sequence[str] | None] | None = None,
    committed: Mapping[str, int] | None = None,
) -> Snapshot:
    """Commit every table in `frames` (one new Delta version each), then make them current
    together by rewriting the layer's snapshot log atomically; until then readers keep the
    previous snapshot. Tables not in `frames` keep the versions they had.

    A table named in `partitions` is stored partitioned by its `_partition` column: its frame
    holds the rows of the partitions listed there, which replace exactly those partitions (a
    listed partition without rows is deleted); `WHOLE` rewrites the table. `committed` names
    versions the caller already committed (partitions written in steps)."""
    previous = snapshot(layout, layer)
    versions = {**(previous.versions if previous else {}), **(committed or {})}
    for table, frame in frames.items():
        uri = table_uri(layout, layer, table)
        options = _options(layout)
        if partitions is not None and table in partitions:
            versions[table] = commit_partitions(uri, frame, partitions[table], options)
        else:
            versions[table] = overwrite_whole(uri, frame, options)
        crash_point(f"{layer}:between_commits")
    published_at = datetime.now(UTC).isoformat()
    new = Snapshot(layer, versions, dict(meta or {}), published_at)
    _write_log(layout, layer, [*history(layout, layer), new])
    return new


def _write_log(layout: Layout, layer: str, entries: Iterable[Snapshot]) -> None:
    text = b"".join(orjson.dumps(s.record(), option=orjson.OPT_SORT_KEYS) + b"\n" for s in entries)
    write_bytes_atomic(_log_path(layout, layer), text)


def vacuum(layout: Layout, retention_hours: int = RETENTION_HOURS) -> list[str]:
    """Delete files no table version younger than the retention needs; paths removed.
    `retention_hours=0` leaves only the current versions readable (what `forget` needs)."""
    removed: list[str] = []
    for layer in LAYERS:
        current = snapshot(layout, layer)
        for table in current.versions if current else {}:
            # keep_versions: a commit left by a crashed publish must not cost the current one
            removed += delta_cache.vacuum(
                table_uri(layout, layer, table),
                _options(layout),
                retention_hours=retention_hours,
                dry_run=False,
                enforce_retention_duration=False,
                full=True,
                keep_versions=[current.versions[table]],
            )
    return removed


def forget_history(layout: Layout) -> None:
    """Keep only the current snapshot of each layer: earlier ones name versions `forget` erased,
    so an as-of read before it says there is no snapshot instead of failing on missing files."""
    for layer in LAYERS:
        current = snapshot(layout, layer)
        if current is not None:
            _write_log(layout, layer, [current])


def replace_history(layout: Layout, layer: str, entries: Iterable[Snapshot]) -> None:
    """Rewrite the layer's snapshot log atomically with `entries` (retention prunes it; the
    last entry must be the snapshot in force)."""
    _write_log(layout, layer, entries)
