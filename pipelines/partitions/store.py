"""Store a layer's tables in partitions, rewriting only the partitions whose rows changed.

Next to its tables a partitioned layer keeps `_partition_digests` (one row per partition: the digest
of what it holds, or was computed from) and silver keeps `_partition_map` (group → partition), both
published in the same snapshot, so a reader of any snapshot sees tables and bookkeeping together.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from pipelines.partitions.assign import MAP_SCHEMA, PARTITION
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

MAP_TABLE = "_partition_map"
DIGESTS_TABLE = "_partition_digests"
# gold: silver rows recomputed at once (a bigger partition is a group of its own)
SILVER_ROWS = 250_000
CHUNK_ROWS = 2_000_000  # input rows recomputed at once: memory follows a chunk, not the corpus


def previous_digests(layout: Layout, layer: str) -> pl.DataFrame | None:
    """The layer's partition digests in force; None when it was not stored in partitions."""
    if not stored.exists(layout, layer, DIGESTS_TABLE):
        return None
    return stored.read(layout, layer, DIGESTS_TABLE)


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
