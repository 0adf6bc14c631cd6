"""Silver assembled one group of partitions at a time, so that memory follows a group
(`partitions.store.SILVER_ROWS` rows), not the corpus (DESIGN §8). The one path: a corpus that fits
one partition is one partition (`shards = 1` and a small corpus), never a second way.

1. Keys: every episode's (episode_id, group_id) and, when the opt-out registry names anyone, the
   subjects' footprint over a projection of the key columns only; then the sticky split →
   partition map as before.
2. Provenance (`_partition_sources`: partition, source, chunk, rows): which chunks of the silver
   cache (unit_cache.py) feed which partition, and the chunk digests silver was assembled from
   (`_silver_chunks`); both are published with silver.
3. Which partitions to assemble (plan.py): every one when there is no partitioned silver yet, a
   crashed build left commits beyond the published snapshot, the assembly scheme (code, opt-out
   registry, layout) changed, or the registry names anyone (a footprint can move with new data);
   otherwise only the partitions fed, before or now, by a chunk whose digest is not the one silver
   was assembled from. A chunk holds whole components, so an unchanged chunk's rows keep their
   partition.
4. Per group: read only the feeding chunks of each cache table, keep the group's rows, count
   turns, withhold, sort, digest, and rewrite the partitions whose digest changed.
5. Unpartitioned tables (contexts, quarantine, survey answers) from lazy scans, then one publish.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.partitions import store
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.rows import SILVER_KEYS, changed, digests
from pipelines.partitions.store import (
    ASSEMBLED_FROM,
    DIGESTS_TABLE,
    MAP_TABLE,
    PROVENANCE,
    chunks,
)
from pipelines.privacy.optouts import empty_optouts, withhold
from pipelines.runtime.faults import crash_point
from pipelines.schemas import silver_schema
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.sources.base import dumps
from pipelines.storage import tables as stored
from pipelines.storage.delta_writes import overwrite_whole
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options
from pipelines.transforms.build import (
    SORT_KEYS,
    WITHHELD,
    parse_quarantine,
    sources_silver,
    stamp_with_ingest_run,
    with_turn_counts,
)
from pipelines.transforms.plan import (
    ASSEMBLY,
    UNPLACED,
    USED_SCHEMA,
    Keys,
    Plan,
    assembly_scheme,
    fold,
    global_keys,
    placed,
    plan_assembly,
    table_stats,
)
from pipelines.transforms.raw_inputs import RAW_INPUTS, current_raw_inputs
from pipelines.transforms.timing import SilverTimes
from pipelines.transforms.unit_cache import CHUNK_COLUMN, chunk_digests, scan_chunks

UNPARTITIONED = tuple(t for t in SILVER_MODELS if t not in SILVER_KEYS)


def _feeding(relation: pl.DataFrame, group: list[str], source: str) -> list[str]:
    """The chunks of `source` that feed a partition of `group`."""
    mine = relation.filter(
        pl.col(PARTITION).is_in(pl.Series(group, dtype=pl.String).implode())
        & (pl.col("source") == source)
    )
    return sorted(mine.get_column(CHUNK_COLUMN).unique().to_list())


def _of_group(frame: pl.LazyFrame, key: str, keys: Keys, group: list[str]) -> pl.LazyFrame:
    """`frame` cut to the rows whose key lives in `group`, before any join: a chunk feeds many
    partitions, and the filter on the key column is read first, so the other columns are read
    for the group's rows only. A group with the unplaced rows keeps every row."""
    if UNPLACED in group:
        return frame
    mine = keys.places[key].filter(
        pl.col(PARTITION).is_in(pl.Series(group, dtype=pl.String).implode())
    )
    return frame.filter(pl.col(key).is_in(mine.get_column(key).implode()))


def assemble_group(
    layout: Layout, keys: Keys, relation: pl.DataFrame, group: list[str]
) -> tuple[dict[str, pl.DataFrame], dict[str, int], pl.DataFrame]:
    """The partitioned silver tables' rows in the partitions `group` (tagged with `_partition`),
    turn-counted, withheld and sorted; rows withheld per table; what each chunk contributed."""
    wanted = pl.Series(group, dtype=pl.String).implode()
    feeding = {source: _feeding(relation, group, source) for source in SOURCES}
    tables, stats = {}, []
    for table, key in SILVER_KEYS.items():
        parts = []
        for source, fed in feeding.items():
            frame = scan_chunks(layout, source, table, fed, with_chunk=True) if fed else None
            if frame is not None:
                rows = placed(_of_group(frame, key, keys, group), key, keys)
                rows = rows.filter(pl.col(PARTITION).is_in(wanted))
                parts.append(rows.collect(engine="streaming"))
                stats.append(table_stats(source, table, parts[-1].lazy(), True).collect().lazy())
        schema = pl.Schema({**silver_schema(table), PARTITION: pl.String})
        tables[table] = (
            pl.concat(parts).drop(CHUNK_COLUMN) if parts else pl.DataFrame(schema=schema)
        )
        del parts
    tables["episodes"] = with_turn_counts(tables["episodes"], tables["turns"])
    withheld = {table: 0 for table in tables}
    if keys.footprint is not None:
        tables, withheld = withhold(tables, empty_optouts(), keys.footprint)
    for table in tables:  # one at a time: each unsorted frame goes as its sorted one comes
        tables[table] = tables[table].sort(SORT_KEYS[table], nulls_last=True)
    return tables, withheld, fold(stats)


def write_group(
    layout: Layout,
    tables: Mapping[str, pl.DataFrame],
    group: list[str],
    previous: pl.DataFrame | None,
    first: bool,
) -> tuple[dict[str, int], pl.DataFrame]:
    """Commit the group's partitions whose digest changed (all of them, the first group
    rewriting the tables whole, when `previous` is None); versions committed, group digests."""
    current = digests(tables)
    if previous is None:
        redo = sorted(current.get_column(PARTITION).to_list())
        replace: list[str] | None = None if first else redo
    else:
        mine = previous.filter(pl.col(PARTITION).is_in(pl.Series(group, dtype=pl.String).implode()))
        redo = replace = changed(current, mine)
    if replace == []:
        return {}, current
    keep = pl.col(PARTITION).is_in(pl.Series(redo, dtype=pl.String).implode())
    options = storage_options(layout.data_root)
    versions = {
        table: stored.commit_partitions(
            stored.table_uri(layout, "silver", table),
            frame if replace is None else frame.filter(keep),
            replace,
            options,
        )
        for table, frame in tables.items()
    }
    return versions, current


def unpartitioned(
    layout: Layout, scans: Mapping[str, Mapping[str, pl.LazyFrame]], keys: Keys
) -> tuple[dict[str, int], dict[str, int]]:
    """Contexts (one row per hash), quarantine (parse + silver rejections) and survey answers,
    withheld and sorted, streamed from the caches and committed one table at a time (only one is
    in memory; the snapshot publishes the versions); versions, rows withheld per table."""
    from pipelines.privacy.subjects import rows_mask

    pieces: dict[str, list[pl.LazyFrame]] = {table: [] for table in UNPARTITIONED}
    for source, frames in scans.items():
        for table in UNPARTITIONED:
            if table in frames:
                frame = frames[table]
                if table == "quarantine":
                    frame = stamp_with_ingest_run(frame, layout, source)
                pieces[table].append(frame)
    pieces["quarantine"] += [parse_quarantine(layout, source) for source in SOURCES]
    versions, withheld = {}, {}
    options = storage_options(layout.data_root)
    for table, frames in pieces.items():
        empty = pl.DataFrame(schema=silver_schema(table))
        lazy = pl.concat(frames) if frames else empty.lazy()
        withheld[table] = 0
        if keys.footprint is not None:
            mask = rows_mask(table, empty, keys.footprint)
            withheld[table] = int(lazy.select(mask.sum()).collect().item())
            lazy = lazy.filter(~mask)
        if table == "contexts":  # content-addressed: the same blob from two places is one row
            lazy = lazy.unique(subset="context_hash", keep="first", maintain_order=True)
        frame = lazy.sort(SORT_KEYS[table], nulls_last=True).collect(engine="streaming")
        versions[table] = overwrite_whole(stored.table_uri(layout, "silver", table), frame, options)
        del frame
    return versions, withheld


def _group_sizes(plan: Plan) -> pl.DataFrame:
    """(partition, rows) of every partition to assemble (0 for one that no chunk feeds now)."""
    rows = plan.relation.group_by(PARTITION).agg(pl.col("rows").sum())
    wanted = pl.DataFrame({PARTITION: plan.assemble}, schema={PARTITION: pl.String})
    return wanted.join(rows, on=PARTITION, how="left").with_columns(pl.col("rows").fill_null(0))


def _digests_now(plan: Plan, fresh: list[pl.DataFrame]) -> pl.DataFrame:
    """The digests of every partition: the assembled ones' new, the others' as they were."""
    kept = []
    if plan.previous is not None:
        done = pl.Series(plan.assemble, dtype=pl.String).implode()
        kept = [plan.previous.filter(~pl.col(PARTITION).is_in(done))]
    return pl.concat([*kept, *fresh]).sort(PARTITION)


def assemble_silver(
    settings: Settings, run_id: str, inputs: str, times: SilverTimes | None = None
) -> dict[str, int]:
    """Refresh the caches (each source timed into `times` when given), assemble the stale
    partitions group by group, then publish silver; rows per table."""
    layout = Layout(settings.data_root)
    scans = sources_silver(settings, times)
    used = pl.concat(
        [chunk_digests(layout, s).with_columns(source=pl.lit(s)) for s in SOURCES]
    ).select(USED_SCHEMA.names())
    keys = global_keys(layout, settings, scans)
    scheme = assembly_scheme(settings)
    plan = plan_assembly(layout, keys, used, scheme)
    crash_point("silver:before_publish")
    versions: dict[str, int] = {}
    fresh: list[pl.DataFrame] = []
    assembled = pl.Series(plan.assemble, dtype=pl.String).implode()
    relation = [plan.relation.filter(~pl.col(PARTITION).is_in(assembled))]
    withheld = {table: 0 for table in SILVER_MODELS}
    for number, group in enumerate(list(chunks(_group_sizes(plan), store.SILVER_ROWS)) or [[]]):
        tables, counts, fed = assemble_group(layout, keys, plan.relation, group)
        committed, group_digests = write_group(layout, tables, group, plan.previous, number == 0)
        del tables  # the next group's rows replace these, not add to them
        versions.update(committed)
        fresh.append(group_digests)
        relation.append(fed)
        withheld.update({t: withheld[t] + n for t, n in counts.items()})
        crash_point("silver:between_groups")
    committed, counts = unpartitioned(layout, scans, keys)
    versions.update(committed)
    withheld.update(counts)
    frames = {
        MAP_TABLE: keys.partition_map,
        DIGESTS_TABLE: _digests_now(plan, fresh),
        PROVENANCE: pl.concat(relation).sort(PARTITION, "source", CHUNK_COLUMN),
        ASSEMBLED_FROM: used,
        RAW_INPUTS: current_raw_inputs(layout),
    }
    meta = {stored.RUN: run_id, stored.INPUTS: inputs, WITHHELD: dumps(withheld), ASSEMBLY: scheme}
    stored.publish(layout, "silver", frames, meta, committed=versions)
    crash_point("silver:after_publish")
    return {table: stored.rows(layout, "silver", table) for table in SILVER_MODELS}
