"""Store a layer's tables in partitions, rewriting only the partitions whose rows changed.

Next to its tables a partitioned layer keeps `_partition_digests`, its record of each partition,
and silver keeps `_partition_map` (group → partition), both published in the same snapshot as the
rows they describe, so a reader of any snapshot sees tables and bookkeeping together. A row of the
record holds what the partition holds (`digest`, order-independent over its rows: partitions/
rows.py, and `rows`) and, in silver, what it was made from (`inputs`: transforms/plan.py): silver
transforms a partition again when its inputs changed, rewrites it when its rows did, and gold
recomputes it when its rows did. A partition whose units give no silver row has inputs but no
digest.

The record is stored partitioned, like the rows, and committed partition by partition, so
partition runs in separate processes (Dagster's `silver_partition`, `gold_partition`) each commit
their own and never overwrite another's; the layer's build then publishes what they committed.
What a layer plans from is the record's newest version, published or not. Silver marks a
partition *pending* (no inputs, no digest) before it commits the partition's rows, and records
its inputs only after them: a process that dies anywhere in between leaves the partition
pending, so it is transformed again, whatever its bronze then is.

What a partition *passed* is recorded beside what it *is*: `_partition_passes`, one row per
(table, partition) whose rows passed the table's contract, with the row digest and the engine
that judged them (pipelines/checks/partitioned.py). The checks judge after the layer is
published, so their passes are published after them, as a new snapshot of the layer with the
same metadata; a pass holds only while the record's digest and the engine are the ones it names,
so a partition whose rows change, or another engine, is judged again. A table stored whole is
the one partition `ONE_PARTITION`, its digest the names of its Delta files (never rewritten).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

import polars as pl

from pipelines.partitions.assign import MAP_SCHEMA, PARTITION
from pipelines.partitions.rows import DIGESTS_SCHEMA
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.delta_writes import commit_partitions, scan_files
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options

MAP_TABLE = "_partition_map"
DIGESTS_TABLE = "_partition_digests"
PASSES_TABLE = "_partition_passes"
PASSES_SCHEMA = pl.Schema(
    {"table": pl.String, PARTITION: pl.String, "digest": pl.String, "engine": pl.String}
)
INPUTS = "inputs"  # silver's record: the partition's input digest when it was last transformed
INPUTS_SCHEMA = pl.Schema({PARTITION: pl.String, INPUTS: pl.String})
RECORD_SCHEMA = pl.Schema({**DIGESTS_SCHEMA, INPUTS: pl.String})  # silver's record
# gold: silver rows recomputed at once (a bigger partition is a group of its own)
SILVER_ROWS = 250_000
CHUNK_ROWS = 2_000_000  # input rows recomputed at once: memory follows a chunk, not the corpus


def silver_record(row_digests: pl.DataFrame, input_digests: pl.DataFrame) -> pl.DataFrame:
    """Silver's record: one row per partition that has rows (DIGESTS_SCHEMA) or units
    (INPUTS_SCHEMA), sorted; a partition without rows has a null digest and 0 rows."""
    return (
        row_digests.select(DIGESTS_SCHEMA.names())
        .join(input_digests.select(INPUTS_SCHEMA.names()), on=PARTITION, how="full", coalesce=True)
        .with_columns(pl.col("rows").fill_null(0))
        .sort(PARTITION)
    )


def committed_record(layout: Layout, layer: str) -> pl.LazyFrame | None:
    """A layer's record at its newest version, published or not (partition runs commit before
    the layer is published); None when there is none, or an earlier version stored it whole."""
    options = storage_options(layout.data_root)
    delta = delta_cache.latest(stored.table_uri(layout, layer, DIGESTS_TABLE), options)
    if delta is None or delta.metadata().partition_columns != [PARTITION]:
        return None
    return scan_files(delta, options)


def committed_silver_record(layout: Layout) -> pl.DataFrame | None:
    """Silver's record at its newest version (RECORD_SCHEMA), published or not: what silver
    plans from, partition runs' commits included; None when there is no record usable so (none,
    stored whole or without inputs by an earlier version): then silver is made whole."""
    record = committed_record(layout, "silver")
    if record is None or INPUTS not in record.collect_schema().names():
        return None
    record = record.select(RECORD_SCHEMA.names()).cast(RECORD_SCHEMA)
    return record.sort(PARTITION).collect()


def in_flight(layout: Layout) -> list[str]:
    """The partitions pending in silver's or gold's newest record (`layer partition`): a
    partition run committing them, or one that stopped before its record."""
    silver = committed_silver_record(layout)
    gold = committed_record(layout, "gold")
    found = []
    if silver is not None:
        found += [f"silver {k}" for k in silver.filter(pl.col(INPUTS).is_null())[PARTITION]]
    if gold is not None:
        unrecorded = gold.filter(pl.col("digest").is_null()).collect()
        found += [f"gold {k}" for k in unrecorded[PARTITION]]
    return sorted(found)


def commit_silver_record(
    layout: Layout, record: pl.DataFrame, replace: Iterable[str] | None
) -> int:
    """Make `record` (RECORD_SCHEMA) silver's record of the partitions `replace` (a listed
    partition without a row leaves the record; None: the whole record); the version."""
    uri = stored.table_uri(layout, "silver", DIGESTS_TABLE)
    targets = None if replace is None else sorted(set(replace))
    frame = record.select(RECORD_SCHEMA.names()).cast(RECORD_SCHEMA).sort(PARTITION)
    return commit_partitions(uri, frame, targets, storage_options(layout.data_root))


def pending(partitions: Iterable[str]) -> pl.DataFrame:
    """The record of partitions about to be rewritten: no inputs, no digest (module docstring)."""
    keys = sorted(set(partitions))
    return pl.DataFrame(
        {PARTITION: keys, "digest": None, "rows": 0, INPUTS: None}, schema=RECORD_SCHEMA
    )


def row_digests(layout: Layout, layer: str, as_of: datetime | None = None) -> pl.DataFrame | None:
    """(PARTITION, digest, rows) of every partition of the layer holding rows, in the snapshot in
    force (or at `as_of`); None when the layer is not stored in partitions."""
    if not stored.exists(layout, layer, DIGESTS_TABLE, as_of):
        return None
    record = stored.read(layout, layer, DIGESTS_TABLE, as_of, with_partition=True)
    return record.filter(pl.col("digest").is_not_null()).select(DIGESTS_SCHEMA.names())


def input_digests(layout: Layout) -> pl.DataFrame | None:
    """(PARTITION, inputs) of every partition of silver in force; None when silver recorded none
    (not stored in partitions, or by a version that kept them elsewhere)."""
    if not stored.exists(layout, "silver", DIGESTS_TABLE):
        return None
    record = stored.read(layout, "silver", DIGESTS_TABLE, with_partition=True)
    if INPUTS not in record.columns:
        return None
    return record.filter(pl.col(INPUTS).is_not_null()).select(INPUTS_SCHEMA.names())


def previous_map(layout: Layout) -> pl.DataFrame:
    return stored.read(layout, "silver", MAP_TABLE, schema=MAP_SCHEMA)


def chunks(partitions: pl.DataFrame, budget: int = CHUNK_ROWS) -> Iterator[list[str]]:
    """Partitions (PARTITION, rows) in order, cut into lists of at most `budget` rows (a bigger
    partition is a chunk of its own)."""
    chunk: list[str] = []
    size = 0
    for key, rows in partitions.select(PARTITION, "rows").sort(PARTITION).iter_rows():
        if chunk and size + rows > budget:
            yield chunk
            chunk, size = [], 0
        chunk.append(key)
        size += rows
    if chunk:
        yield chunk


def recorded_passes(layout: Layout, layer: str, table: str, engine: str) -> dict[str, str]:
    """Partition → the digest `table`'s contract passed it with, judged by `engine`, as the
    snapshot in force records (empty before any pass, or of another layout)."""
    home = stored.home_layer(layer, table)
    if not stored.exists(layout, home, PASSES_TABLE):
        return {}
    passes = stored.read(layout, home, PASSES_TABLE)
    if passes.schema != PASSES_SCHEMA:
        return {}
    mine = passes.filter((pl.col("table") == table) & (pl.col("engine") == engine))
    return dict(mine.select(PARTITION, "digest").iter_rows())


def record_passes(layout: Layout, layer: str, tables: list[str], passes: pl.DataFrame) -> bool:
    """Make `passes` (PASSES_SCHEMA) the layer's passes of `tables`, the tables judged (one
    judged without a pass keeps none; the other tables' are kept), published as a new snapshot
    with the metadata in force. Nothing is written when they are recorded already or the layer
    has no snapshot; whether a snapshot was published."""
    current = stored.snapshot(layout, layer)
    if current is None:
        return False
    before = pl.DataFrame(schema=PASSES_SCHEMA)
    if stored.exists(layout, layer, PASSES_TABLE):
        before = stored.read(layout, layer, PASSES_TABLE)
        if before.schema != PASSES_SCHEMA:
            before = pl.DataFrame(schema=PASSES_SCHEMA)
    kept = before.filter(~pl.col("table").is_in(pl.Series(tables, dtype=pl.String).implode()))
    after = pl.concat([kept, passes.select(PASSES_SCHEMA.names())]).sort("table", PARTITION)
    if stored.exists(layout, layer, PASSES_TABLE) and after.equals(before.sort("table", PARTITION)):
        return False
    stored.publish(layout, layer, {PASSES_TABLE: after}, current.meta)
    return True
