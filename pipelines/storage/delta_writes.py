"""How tables.py commits a table: a whole overwrite, or a replacement of some partitions, each one
Delta commit. A table's schema may change with the code, and a data root built by an earlier
version may hold it unpartitioned: a whole overwrite redefines the table; replacing some
partitions of a table whose layout or schema differs would mix two schemas, so it is refused
unless the replaced partitions are all there are (then it is a whole overwrite)."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import unquote

import polars as pl
import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from pipelines.storage import delta_cache

PARTITION = "_partition"  # the partition column of a partitioned table (pipelines/partitions/)
# no column statistics in the Delta log: the log then holds no values (forget, DESIGN §6)
WRITE_OPTIONS = {"configuration": {"delta.dataSkippingNumIndexedCols": "0"}}
_COMMIT_ATTEMPTS = 5


def file_paths(delta: DeltaTable) -> list[str]:
    """The table's files in Delta's order; local ones as plain paths: delta-rs percent-encodes
    them (`a%20root`), which Polars' `scan_parquet` then looks up literally and does not find."""
    return [uri if "://" in uri else unquote(uri) for uri in delta.file_uris()]


def scan_files(delta: DeltaTable, storage_options: dict[str, str] | None) -> pl.LazyFrame:
    """What `pl.scan_delta(delta)` reads (partition columns included), through `file_paths`:
    `scan_delta` looks local files up percent-encoded, so it finds none under a data root whose
    path holds a space or another escaped character."""
    paths = file_paths(delta)
    if not paths:  # Delta's own typed empty read opens no file
        return pl.scan_delta(delta).head(0)
    hive = bool(delta.metadata().partition_columns)
    return pl.scan_parquet(paths, hive_partitioning=hive, storage_options=storage_options)


class LayoutChanged(RuntimeError):
    """Some partitions of a table were to be replaced while its layout or schema changed."""


def _current(uri: str, storage_options: dict[str, str] | None) -> DeltaTable | None:
    return delta_cache.latest(uri, storage_options)


def _write(
    uri: str,
    frame: pl.DataFrame,
    options: dict,
    storage_options: dict[str, str] | None,
    delta: DeltaTable | None,
) -> int:
    """One overwrite commit (`options`: deltalake's write options) on `delta`, the table as
    just opened by `_current` (None: there is none yet); the version committed. Through the
    table kept open, which then holds that version, instead of opening the table twice more
    (once to write, once for the version). Delta's conflict check works as with a fresh open:
    a commit by another process since `delta` was read makes it retry or fail."""
    frame.write_delta(
        uri if delta is None else delta,
        mode="overwrite",
        delta_write_options=options,
        storage_options=storage_options,
    )
    written = delta if delta is not None else _current(uri, storage_options)
    if written is None:
        raise RuntimeError(f"{uri}: no Delta table after writing one")
    return written.version()


def overwrite_whole(
    uri: str, frame: pl.DataFrame, storage_options: dict[str, str] | None = None
) -> int:
    """The table becomes `frame` (with its schema, unpartitioned); the new version."""
    return _overwrite(uri, frame, storage_options, [], _current(uri, storage_options))


def _overwrite(
    uri: str,
    frame: pl.DataFrame,
    storage_options: dict[str, str] | None,
    partition_by: Sequence[str],
    delta: DeltaTable | None,
) -> int:
    options = {**WRITE_OPTIONS, "schema_mode": "overwrite", "partition_by": list(partition_by)}
    return _write(uri, frame, options, storage_options, delta)


def _same_layout(delta: DeltaTable, frame: pl.DataFrame) -> bool:
    if delta.metadata().partition_columns != [PARTITION]:
        return False
    stored = pl.from_arrow(pa.schema(delta.schema().to_arrow()).empty_table())  # type: ignore[arg-type]
    return dict(stored.schema) == dict(frame.schema)


def _replaces_all(delta: DeltaTable, replace: Sequence[str]) -> bool:
    if delta.metadata().partition_columns != [PARTITION]:
        return False
    return {p[PARTITION] for p in delta.partitions()} <= set(replace)


def commit_partitions(
    uri: str,
    frame: pl.DataFrame,
    replace: Sequence[str] | None,
    storage_options: dict[str, str] | None = None,
) -> int:
    """Replace the listed partitions of a partitioned Delta table by `frame`'s rows (all of them
    when `replace` is None) in one commit; the new version. A concurrent writer of other
    partitions makes the commit retry, never lose either write."""
    delta = _current(uri, storage_options)
    if delta is not None and replace is not None and not _same_layout(delta, frame):
        if not _replaces_all(delta, replace):
            raise LayoutChanged(
                f"{uri}: its layout or schema changed but only some of its partitions were "
                "to be rewritten; rewrite the whole table"
            )
        replace = None
    # A first write of some partitions goes through the predicate path too: two processes
    # creating the table at once then conflict and retry, where a whole overwrite would drop
    # the other's rows.
    if replace is None and (delta is None or not _same_layout(delta, frame)):
        return _overwrite(uri, frame, storage_options, [PARTITION], delta)
    options: dict = {**WRITE_OPTIONS, "partition_by": [PARTITION]}
    if replace is not None:
        if not replace:
            return (
                delta.version()
                if delta is not None
                else _overwrite(uri, frame, storage_options, [PARTITION], delta)
            )
        keys = ", ".join("'" + key.replace("'", "''") + "'" for key in sorted(set(replace)))
        options["predicate"] = f"{PARTITION} IN ({keys})"
    for attempt in range(_COMMIT_ATTEMPTS):
        try:
            if attempt:  # another process committed first: write on its version
                delta = _current(uri, storage_options)
            return _write(uri, frame, options, storage_options, delta)
        except CommitFailedError:
            if attempt == _COMMIT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
