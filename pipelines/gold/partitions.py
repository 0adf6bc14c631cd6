"""Gold per silver partition: which partitions are stale, and recomputing them.

A gold partition is stale when what it was computed from (the silver partition's digest, the
reward parameters, the gold code) differs from now. Each recomputed chunk commits its rows and then
its digest rows, each into their own partitions, so partition runs in separate processes (Dagster's
partitioned `gold_partition` asset) never overwrite each other and a crash between the two leaves
the partition stale, to be redone. A partition run marks its partition pending (a record row
without digest) before its first row file, so a forget sees it in flight (partitions/store.py
`in_flight`).
`refresh_gold` (refresh.py) publishes the versions afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl
from deltalake import DeltaTable

from pipelines.gold import GOLD_TABLES, SILVER_INPUTS, build_gold, code_and_params
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.rows import DIGESTS_SCHEMA, GOLD_KEYS, changed, tag
from pipelines.partitions.store import (
    DIGESTS_TABLE,
    INPUTS,
    SILVER_ROWS,
    chunks,
    committed_record,
    committed_silver_record,
    row_digests,
)
from pipelines.privacy.forget import forget_in_progress
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options


def committed_silver(layout: Layout) -> pl.DataFrame | None:
    """(PARTITION, digest, rows) of every silver partition as committed, published or not (a
    silver partition run's commit included); a pending partition is left out, so its gold waits
    for it; None when silver's record is not stored in partitions."""
    record = committed_silver_record(layout)
    if record is None:
        return None
    done = record.filter(pl.col("digest").is_not_null() & pl.col(INPUTS).is_not_null())
    return done.select(DIGESTS_SCHEMA.names())


def wanted_inputs(layout: Layout, params: Mapping[str, Any], newest: bool = False) -> pl.DataFrame:
    """One row per silver partition in force (`newest`: as committed, published or not): what
    its gold is computed from, and its rows."""
    silver = committed_silver(layout) if newest else row_digests(layout, "silver")
    silver = pl.DataFrame(schema=DIGESTS_SCHEMA) if silver is None else silver
    key = code_and_params(params)
    return silver.with_columns(
        digest=pl.col("digest").map_elements(
            lambda d: fingerprint([json_part([d, key])]), return_dtype=pl.String
        )
    )


def _uri(layout: Layout, table: str) -> str:
    return stored.table_uri(layout, "gold", table)


def _delta(layout: Layout, table: str) -> DeltaTable:
    return delta_cache.existing(_uri(layout, table), storage_options(layout.data_root))


def committed_inputs(layout: Layout) -> pl.DataFrame | None:
    """The digests gold partitions were last committed with (newest version, published or not:
    a partition run commits before the snapshot is published); None before the first, or when an
    earlier version stored them whole (every partition is then recomputed)."""
    record = committed_record(layout, "gold")
    return None if record is None else record.select(DIGESTS_SCHEMA.names()).collect()


def stale(
    layout: Layout, params: Mapping[str, Any], newest: bool = False
) -> tuple[pl.DataFrame, list[str], bool]:
    """(stale partitions with their wanted inputs, vanished partitions, whether gold must be
    rewritten whole); `newest`: against silver as committed (partition runs), not published."""
    wanted = wanted_inputs(layout, params, newest)
    previous = committed_inputs(layout)
    if previous is None:
        return wanted, [], True
    redo = pl.Series(changed(wanted, previous), dtype=pl.String)
    gone = sorted(set(previous.get_column(PARTITION)) - set(wanted.get_column(PARTITION)))
    return wanted.filter(pl.col(PARTITION).is_in(redo.implode())), gone, False


def compute(
    layout: Layout,
    params: Mapping[str, Any],
    wanted: pl.DataFrame,
    keys: list[str],
    replace: Iterable[str] | None,
    newest: bool = False,
) -> dict[str, int]:
    """Gold of the silver partitions `keys` (`newest`: as committed, published or not)
    committed into the partitions `replace` (None: the whole table), then their digests; the
    versions committed."""
    silver = {
        table: stored.read(
            layout, "silver", table, partitions=keys, with_partition=True, newest=newest
        )
        for table in SILVER_INPUTS
    }
    places = {"episode_id": silver["episodes"].select("episode_id", PARTITION)}
    gold = tag(
        build_gold({t: f.drop(PARTITION) for t, f in silver.items()}, params), GOLD_KEYS, places
    )
    gold[DIGESTS_TABLE] = wanted.filter(pl.col(PARTITION).is_in(pl.Series(keys).implode()))
    targets = None if replace is None else sorted(set(replace))
    return {
        table: stored.commit_partitions(
            _uri(layout, table), frame, targets, storage_options(layout.data_root)
        )
        for table, frame in gold.items()
    }


def bring_up_to_date(layout: Layout, params: Mapping[str, Any]) -> dict[str, int]:
    """Recompute every stale partition in chunks; the newest version of each gold table."""
    todo, gone, whole = stale(layout, params)
    first = True
    # as many silver rows at once as silver assembles: gold's memory follows silver's
    for keys in chunks(todo, SILVER_ROWS) if todo.height else iter([[]]):
        if keys or gone or whole:
            replace = None if (first and whole) else [*keys, *(gone if first else [])]
            compute(layout, params, todo, keys, replace)
        first = False
    tables = [*GOLD_TABLES, DIGESTS_TABLE]
    return {t: _delta(layout, t).version() for t in tables}


def refresh_partition(layout: Layout, params: Mapping[str, Any], key: str) -> bool:
    """Bring one gold partition up to date (a Dagster partition run) from silver as committed,
    so a run of the same key's `silver_partition` before it counts before silver is published;
    whether it was stale. Silver's record is read before its rows: should silver be rewritten in
    between, the gold recorded names a digest silver does not end with, and the build's
    `gold_tables` (which computes from published silver) recomputes it."""
    todo, _, whole = stale(layout, params, newest=True)
    if whole or key not in set(todo.get_column(PARTITION)):
        return False
    # before and after the pending mark, as silver's runs do (transforms/partition_run.py)
    if forget_in_progress(layout):
        return False
    mark_pending(layout, key)
    if forget_in_progress(layout):
        return False
    compute(layout, params, todo, [key], [key], newest=True)
    return True


def mark_pending(layout: Layout, key: str) -> None:
    """Record gold partition `key` as pending (no digest) before its rows are written, so a
    forget sees a run in flight (privacy/forget.py) and a run stopped before its record leaves
    the partition stale; `compute` records it."""
    frame = pl.DataFrame({PARTITION: [key], "digest": None, "rows": 0}, schema=DIGESTS_SCHEMA)
    options = storage_options(layout.data_root)
    stored.commit_partitions(_uri(layout, DIGESTS_TABLE), frame, [key], options)
