"""What a partitioned silver build assembles (assemble.py): the global keys (where each episode
and group lives, the opt-out footprint), which cache chunks feed which partition, and which
partitions can have changed since the published silver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.partitions.assign import PARTITION, assign_partitions, scheme_of, with_episodes
from pipelines.partitions.rows import SILVER_KEYS, placement
from pipelines.partitions.store import ASSEMBLED_FROM, PROVENANCE, previous_digests, previous_map
from pipelines.privacy.optouts import OPTOUTS_FILE, load_optouts
from pipelines.privacy.subjects import Footprint, rows_mask, subject_footprint
from pipelines.schemas import silver_schema
from pipelines.splits.assign import assign_splits
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options
from pipelines.transforms.build import placement_clusters
from pipelines.transforms.unit_cache import CHUNK_COLUMN, scan_chunks

ASSEMBLY = "assembly"  # silver snapshot metadata: what assembly is a function of beyond chunks
UNPLACED = "unplaced"  # the partition of a row whose key has no place (partitions/rows.tag)
PROVENANCE_SCHEMA = pl.Schema(
    {
        PARTITION: pl.String,
        "source": pl.String,
        CHUNK_COLUMN: pl.String,
        "rows": pl.Int64,
        "digest": pl.String,  # of the chunk's rows in the partition; null: not computed
    }
)
_SEED = 0x7475726E6C616B65
USED_SCHEMA = pl.Schema(
    {"source": pl.String, CHUNK_COLUMN: pl.String, "digest": pl.String, "scheme": pl.String}
)
# every column the opt-out footprint (privacy/subjects.py) reads
FOOTPRINT_COLUMNS = (
    *("episode_id", "group_id", "source", "native_id", "turn_id", "actor_id", "role"),
    *("decision_id", "actor_type", "context_hash", "agent_id", "feedback_id", "attributes"),
)
FOOTPRINT_TABLES = ("episodes", "turns", "decisions", "feedback", "agent_rounds", "contexts")


@dataclass(frozen=True)
class Keys:
    places: dict[str, pl.DataFrame]  # key column → (key, partition)
    partition_map: pl.DataFrame
    footprint: Footprint | None  # None: nobody opted out


@dataclass(frozen=True)
class Plan:
    relation: pl.DataFrame  # PROVENANCE_SCHEMA after this build
    assemble: list[str]  # partitions to assemble
    previous: pl.DataFrame | None  # digests to compare with; None: rewrite the tables whole


def _projection(scans: Mapping[str, Mapping[str, pl.LazyFrame]], table: str) -> pl.DataFrame:
    names = [c for c in silver_schema(table).names() if c in FOOTPRINT_COLUMNS]
    frames = [s[table].select(names) for s in scans.values() if table in s]
    if not frames:
        return pl.DataFrame(schema=silver_schema(table)).select(names)
    return pl.concat(frames).collect(engine="streaming")


def global_keys(
    layout: Layout, settings: Settings, scans: Mapping[str, Mapping[str, pl.LazyFrame]]
) -> Keys:
    """Where every kept episode and group lives (opted-out subjects' episodes have no place; the
    groups one unit component ties together share a partition) and the footprint, from
    projections of the caches `scans` (source → table → frame)."""
    optouts = load_optouts(settings.raw_root)[0]
    footprint = None
    if optouts.is_empty():
        episodes = _projection(scans, "episodes")
    else:
        projected = {table: _projection(scans, table) for table in FOOTPRINT_TABLES}
        footprint = subject_footprint(projected, optouts.select("subject_kind", "subject_id"))
        episodes = projected["episodes"]
        episodes = episodes.filter(~rows_mask("episodes", episodes, footprint))
    splits = assign_splits(episodes.get_column("group_id"), settings.splits)
    partition_map = assign_partitions(
        with_episodes(splits, episodes),
        previous_map(layout),
        settings.splits,
        settings.partition_shards,
        settings.partition_episodes,
        placement_clusters(settings),
    )
    return Keys(placement(episodes, partition_map), partition_map, footprint)


def placed(frame: pl.LazyFrame, key: str, keys: Keys) -> pl.LazyFrame:
    """`frame` with the `_partition` of its `key` column (UNPLACED where it has none)."""
    return frame.join(keys.places[key].lazy(), on=key, how="left").with_columns(
        pl.col(PARTITION).fill_null(UNPLACED)
    )


def table_stats(source: str, table: str, frame: pl.LazyFrame, with_digest: bool) -> pl.LazyFrame:
    """Rows (with digests: sum, min, max of row hashes) per (partition, chunk) of placed cache
    rows of one table (`frame` has `_partition` and `_chunk`)."""
    columns = [c for c in frame.collect_schema().names() if c not in (PARTITION, CHUNK_COLUMN)]
    hashed = frame.with_columns(_h=pl.struct(columns).hash(_SEED))
    aggs = [pl.len().cast(pl.Int64).alias("n")]
    if with_digest:
        aggs += [pl.col("_h").sum().alias("s"), pl.col("_h").min().alias("lo")]
        aggs += [pl.col("_h").max().alias("hi")]
    grouped = hashed.group_by(PARTITION, CHUNK_COLUMN).agg(*aggs)
    return grouped.with_columns(source=pl.lit(source), table=pl.lit(table))


def fold(stats: list[pl.LazyFrame], with_digest: bool = True) -> pl.DataFrame:
    """`table_stats` of every table folded into what each chunk contributes to each partition
    (PROVENANCE_SCHEMA): rows, and an order-independent digest of them."""
    if not stats:
        return pl.DataFrame(schema=PROVENANCE_SCHEMA)
    found = pl.concat(stats, how="diagonal").collect(engine="streaming")
    fields = ("table", "n", "s", "lo", "hi") if with_digest else ("table",)
    line = pl.concat_str([pl.col(c).cast(pl.String).fill_null("-") for c in fields], separator=":")
    folded = found.group_by(PARTITION, "source", CHUNK_COLUMN).agg(
        rows=pl.col("n").sum(), _all=line.sort().str.join("|")
    )
    digest = pl.col("_all").map_elements(lambda t: fingerprint([t]), return_dtype=pl.String)
    out = folded.with_columns(digest=digest if with_digest else pl.lit(None, pl.String))
    return (
        out.select(PROVENANCE_SCHEMA.names())
        .cast(PROVENANCE_SCHEMA)
        .sort(PARTITION, "source", CHUNK_COLUMN)
    )


def provenance(
    layout: Layout,
    keys: Keys,
    chunks: Mapping[str, list[str] | None],
    with_digest: bool = False,
) -> pl.DataFrame:
    """What the given chunks of each source (None: all) contribute to each partition (`fold`);
    without digests only the key columns are read."""
    parts = []
    for source, wanted in chunks.items():
        for table, key in SILVER_KEYS.items():
            frame = scan_chunks(layout, source, table, wanted, with_chunk=True)
            if frame is not None:
                frame = frame if with_digest else frame.select(key, CHUNK_COLUMN)
                parts.append(table_stats(source, table, placed(frame, key, keys), with_digest))
    return fold(parts, with_digest)


def assembly_scheme(settings: Settings) -> str:
    """What assembly is a function of besides the cache: its code, opt-outs, layout."""
    optouts = settings.raw_root / OPTOUTS_FILE
    return fingerprint(
        [
            engine_digest(),
            optouts.read_bytes() if optouts.exists() else "no opt-outs",
            json_part(scheme_of(settings.splits, settings.partition_shards)),
        ]
    )


def _left_behind(layout: Layout) -> bool:
    """A partitioned table missing from the published snapshot, or with commits beyond it (a
    crashed build): its newest version may hold partitions the snapshot's digests do not
    describe, so the tables are rewritten whole."""
    current = stored.snapshot(layout, "silver")
    options = storage_options(layout.data_root)
    for table in SILVER_KEYS:
        if current is None or table not in current.versions:
            return True
        uri = stored.table_uri(layout, "silver", table)
        if delta_cache.existing(uri, options).version() != current.versions[table]:
            return True
    return False


def _changed_chunks(layout: Layout, used: pl.DataFrame) -> pl.DataFrame:
    """(source, chunk) whose digest is not the one silver was assembled from, or that vanished."""
    before = stored.read(layout, "silver", ASSEMBLED_FROM, schema=USED_SCHEMA)
    pair = ["source", CHUNK_COLUMN]
    return pl.concat(
        [
            used.join(before, on=USED_SCHEMA.names(), how="anti").select(pair),
            before.join(used, on=pair, how="anti").select(pair),
        ]
    ).unique()


def _full(layout: Layout, keys: Keys, previous: pl.DataFrame | None) -> Plan:
    """Every partition, now or before (`previous` None: tables rewritten whole); digests of the
    relation are filled in by the assembly."""
    relation = provenance(layout, keys, {source: None for source in SOURCES})
    every = set(relation.get_column(PARTITION))
    every |= set() if previous is None else set(previous.get_column(PARTITION))
    return Plan(relation, sorted(every), previous)


def plan_assembly(layout: Layout, keys: Keys, used: pl.DataFrame, scheme: str) -> Plan:
    """Which partitions to assemble (module docstring of assemble.py) and the provenance after
    this build; `used`: the cache's chunk digests now (USED_SCHEMA)."""
    previous = previous_digests(layout, "silver")
    if previous is None or _left_behind(layout):
        return _full(layout, keys, None)
    full = (
        keys.footprint is not None
        or stored.meta(layout, "silver", ASSEMBLY) != scheme
        or not stored.exists(layout, "silver", PROVENANCE)
    )
    if full:
        return _full(layout, keys, previous)
    changed = _changed_chunks(layout, used)
    before = stored.read(layout, "silver", PROVENANCE, schema=PROVENANCE_SCHEMA)
    if before.get_column("digest").null_count():
        return _full(layout, keys, previous)
    now = changed.join(used, on=["source", CHUNK_COLUMN], how="semi")
    wanted = {s: c.get_column(CHUNK_COLUMN).to_list() for (s,), c in now.group_by("source")}
    fresh = provenance(layout, keys, wanted, with_digest=True)
    pair = ["source", CHUNK_COLUMN]
    kept = before.join(changed, on=pair, how="anti")
    relation = pl.concat([kept, fresh]).sort(PARTITION, "source", CHUNK_COLUMN)
    # a partition whose every chunk contributes what it did before is unchanged
    was = before.join(changed, on=pair, how="semi")
    moved = pl.concat(
        [was.join(fresh, on=was.columns, how="anti"), fresh.join(was, on=was.columns, how="anti")]
    )
    return Plan(relation, sorted(set(moved.get_column(PARTITION))), previous)
