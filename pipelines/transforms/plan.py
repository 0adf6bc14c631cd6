"""What a silver build transforms: every source's units placed in partitions before the
transform, each partition's input digest, and which partitions are stale (assemble.py).

Each source's `units.py` tags its bronze rows with units, links the units that must be
transformed together and gives each unit its split group. The partition map places whole
clusters of groups (partitions/assign.py): groups tied by a component of linked units share a
partition, so a partition is a union of whole components and whole groups, and its silver is the
transform of its units' bronze alone. A unit without a group (an orphan event, a PRAR run, a
participant file) is placed as a group of its own name (`PLACED_ALONE`), inside its component's
partition.

A partition's input digest covers its units and what their silver is a function of: a digest of
their bronze rows (every column; `_unit_rows`), the evidence rows they read (each source's
`unit_evidence_reads`) and, per source, what every unit reads (the transform scheme: code,
settings; evidence read whole); plus the opt-out registry (a partition is withheld as it is
transformed) and the partition layout. A partition is transformed again exactly when its digest
changed; one no unit lives in any more is emptied.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.partitions.assign import PARTITION, assign_partitions, scheme_of
from pipelines.partitions.rows import SILVER_KEYS
from pipelines.partitions.store import (
    DIGESTS_TABLE,
    INPUTS,
    RECORD_SCHEMA,
    committed_silver_record,
    previous_map,
)
from pipelines.privacy.optouts import OPTOUTS_FILE, load_optouts
from pipelines.sources.base import sha256_hex
from pipelines.splits.assign import assign_splits
from pipelines.splits.near_dups import (
    NEAR_DUPS_SCHEMA as NEAR,
)
from pipelines.splits.near_dups import (
    PROMPTS_SCHEMA,
    SIGNATURES_TABLE,
    STORED_SCHEMA,
    prompt_clusters,
)
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options
from pipelines.transforms.build import load_bronze, transform_scheme
from pipelines.transforms.timing import SilverTimes
from pipelines.transforms.units import (
    UNIT,
    collect_shared,
    evidence,
    group_clusters,
    source_units,
    unit_groups,
)

# tables stored whole (contexts, quarantine, survey answers): each partition's rows are kept in
# `_piece_<table>`, partitioned, and the whole table is made again from them on every rebuild
PIECES = ("contexts", "quarantine", "survey_answers")
PLACED_ALONE = "\x1f"  # prefix of the placement name of a unit without a split group
_SEP = "\x1f"
_ROW_SEED = 0x7475726E6C616B65  # fixed: a unit's row digest compares across builds


def piece_table(table: str) -> str:
    return f"_piece_{table}"


@dataclass(frozen=True)
class SourceUnits:
    tagged: dict[str, pl.LazyFrame]  # bronze with `_unit`
    evidence: dict[str, pl.DataFrame]  # the source's unit evidence of the whole bronze
    read_keys: dict[str, pl.DataFrame]  # per evidence table read by key: `_unit` and keys
    unit_files: pl.DataFrame  # unit, file: the files holding each unit's bronze rows
    # per table with a scan key (a source's SCAN_KEYS): unit and the key's values in its rows
    scan_values: dict[str, pl.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    sources: dict[str, SourceUnits]
    partition_map: pl.DataFrame  # partitions/assign.py MAP_SCHEMA, every placement name
    units: pl.DataFrame  # source, unit, _partition, rows (bronze rows)
    digests: pl.DataFrame  # partitions/store.py INPUTS_SCHEMA: every partition now
    stale: list[str]  # partitions to transform (and those to empty)
    whole: bool  # no usable previous silver: the tables are rewritten whole
    # the record each stale partition is compared with: silver's newest (partitions/store.py),
    # partition runs' commits included; empty when whole
    record: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=RECORD_SCHEMA))
    optouts: bool = False  # the registry names someone: every partition is stale
    # each episode's prompt cluster (NEAR_DUPS_SCHEMA), the signatures a next plan signs no more
    near_duplicates: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=NEAR))
    signatures: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=STORED_SCHEMA))


def _whole_reads(
    ev: Mapping[str, pl.DataFrame], reads: Mapping[str, pl.LazyFrame]
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame, list[str]]:
    """(each read table's (unit, key columns), unit → read digest, digests of tables read
    whole)."""
    per_table, per_unit, whole = {}, [], []
    for name, table in sorted(ev.items()):
        if name not in reads:
            whole.append(f"{name}:{table.hash_rows(seed=0).sort().to_list()}")
            continue
        wanted = reads[name].collect()
        keys = [c for c in wanted.columns if c != UNIT]
        per_table[name] = wanted
        hashed = table.select(*keys, _h=table.hash_rows(seed=0).cast(pl.String))
        per_unit.append(
            wanted.join(hashed, on=keys, how="left", nulls_equal=True).select(
                unit=pl.col(UNIT), item=pl.lit(f"e:{name}:") + pl.col("_h").fill_null("-")
            )
        )
    empty = pl.DataFrame(schema={"unit": pl.String, "item": pl.String})
    return per_table, pl.concat(per_unit) if per_unit else empty, whole


def _unit_rows(
    tagged: Mapping[str, pl.LazyFrame], scan_keys: Mapping[str, str]
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, pl.DataFrame]]:
    """(unit, file, rows: the files holding each unit's bronze rows; unit, item: what its rows
    hold, per table; per table with a scan key, unit and the key's values in its rows). A unit's
    silver is a function of its bronze rows (every column, file and locator included), so an
    item digests them (n, sum, min, max of their 64-bit row hashes, as partitions/rows.py digests
    a partition): a file that grew, or was parsed again, leaves every unit whose rows it did not
    change fresh. Keyed on the file ids instead, a night appending to 5 long JSONL files made
    every unit of them, so every partition, stale."""
    names = sorted(tagged)
    frames = pl.collect_all(
        [
            tagged[t].select(
                pl.col(UNIT).alias("unit"),
                "file",
                *([scan_keys[t]] if t in scan_keys else []),
                _h=pl.struct(pl.exclude(UNIT)).hash(seed=_ROW_SEED),
            )
            for t in names
        ]
    )
    unit_files = (
        pl.concat([f.select("unit", "file") for f in frames])
        .group_by("unit", "file")
        .agg(rows=pl.len().cast(pl.Int64))
    )
    digested = [
        frame.group_by("unit").agg(
            item=pl.format(
                "r:{}:{}:{}:{}:{}",
                pl.lit(table),
                pl.len(),
                pl.col("_h").sum(),
                pl.col("_h").min(),
                pl.col("_h").max(),
            )
        )
        for table, frame in zip(names, frames, strict=True)
    ]
    values = {
        table: frame.select("unit", scan_keys[table]).unique()
        for table, frame in zip(names, frames, strict=True)
        if table in scan_keys
    }
    empty = pl.DataFrame(schema={"unit": pl.String, "item": pl.String})
    return unit_files, pl.concat(digested) if digested else empty, values


def _source(
    source: str, layout: Layout, settings: Settings, scheme: str
) -> tuple[SourceUnits, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The source's units (with their inputs and bronze rows), links, groups and prompts (those
    of a source whose `units.py` has `unit_prompts`: its units' first user text in bronze)."""
    module = source_units(source)
    bronze = load_bronze(source, layout)
    tagged = module.unit_keys(dict(bronze), settings)
    unit_files, row_items, scan_values = _unit_rows(tagged, getattr(module, "SCAN_KEYS", {}))
    bronze = {**bronze, **collect_shared(source, bronze, settings)}  # for every hook but unit_keys
    links = module.unit_links(dict(bronze), settings).collect()
    ev = {n: f.collect() for n, f in evidence(source, bronze, settings).items()}
    groups = unit_groups(source, bronze, settings, ev)
    reads = getattr(module, "unit_evidence_reads", None)
    read_keys, unit_reads, whole = _whole_reads(ev, reads(dict(bronze), settings) if reads else {})
    # what every unit of the source reads: the scheme, the evidence read whole
    shared = fingerprint([scheme, source, pl.__version__, json_part(whole)])
    items = pl.concat([row_items, unit_reads])
    every = pl.concat([unit_files.select("unit"), links.select("unit"), groups.select("unit")])
    inputs = (
        every.unique()
        .join(items.unique().group_by("unit").agg(pl.col("item").sort()), on="unit", how="left")
        .join(unit_files.group_by("unit").agg(pl.col("rows").sum()), on="unit", how="left")
        .select(
            source=pl.lit(source),
            unit="unit",
            inputs=pl.concat_str(
                pl.lit(shared + _SEP),
                pl.col("item").fill_null([]).list.join(_SEP),
            ),
            rows=pl.col("rows").fill_null(0),
        )
    )
    qualified = pl.lit(source + _SEP) + pl.col("unit")
    links = links.select(unit=qualified, link=pl.lit(source + _SEP) + pl.col("link"))
    groups = groups.drop_nulls("group_id").select("group_id", "episodes", unit=qualified)
    found = SourceUnits(tagged, ev, read_keys, unit_files.select("unit", "file"), scan_values)
    prompts = pl.DataFrame(schema=PROMPTS_SCHEMA)
    if settings.splits.near_duplicates.enabled and hasattr(module, "unit_prompts"):
        prompts = module.unit_prompts(dict(bronze), settings).collect().cast(PROMPTS_SCHEMA)
    return found, inputs, links, groups, prompts


def silver_scheme(settings: Settings) -> str:
    """What every partition's silver is a function of besides its units' inputs: the transform
    scheme (code, settings), the opt-out registry, the partition layout."""
    optouts = settings.raw_root / OPTOUTS_FILE
    return fingerprint(
        [
            transform_scheme(settings),
            optouts.read_bytes() if optouts.exists() else "no opt-outs",
            json_part(scheme_of(settings.splits, settings.partition_shards)),
        ]
    )


def _place(
    units: pl.DataFrame,
    links: pl.DataFrame,
    groups: pl.DataFrame,
    layout: Layout,
    s: Settings,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the partition map over every placement name, unit → partition). Near-duplicate prompt
    clusters are no edge here: they tie groups' splits, not their rows (no silver or gold row
    reads another group's prompt), and the release keys each partition on its groups' splits and
    its episodes' clusters (release/build/datasets.py); as edges, a corpus of templated prompts
    was one cluster, so one partition that every night transformed again whole."""
    qualified = pl.col("source") + _SEP + pl.col("unit")
    named = (
        units.select(key=qualified)
        .join(groups.rename({"unit": "key"}), on="key", how="left")
        .with_columns(place=pl.coalesce("group_id", PLACED_ALONE + pl.col("key")))
    )
    clusters = group_clusters(
        named.select(unit="key", group_id="place"), links.select("unit", "link")
    )
    # what a batch is sized by (AUTO): the episodes the units will give
    weight = named.group_by("place").agg(pl.col("episodes").fill_null(0).sum())
    splits = assign_splits(named.get_column("place"), s.splits).join(
        weight.rename({"place": "group_id"}), on="group_id", how="left"
    )
    partition_map = assign_partitions(
        splits.with_columns(pl.col("episodes").cast(pl.Int64)),
        previous_map(layout),
        s.splits,
        s.partition_shards,
        s.partition_episodes,
        clusters,
    )
    placed = named.join(
        partition_map.select(place="group_id", partition=PARTITION), on="place", how="left"
    )
    # a unit of two groups (a pair copied under two prompts) has both in one cluster: one place
    one = placed.select("key", **{PARTITION: pl.col("partition")}).unique("key")
    unit_map = units.with_columns(key=qualified).join(one, on="key", how="left")
    return partition_map, unit_map.drop("key")


def _stored_in_partitions(layout: Layout) -> bool:
    """Whether silver's published snapshot holds its record and every partitioned table (and
    piece) is stored in partitions at its newest version: else (an earlier version stored them
    whole, or silver was never published) they are rewritten whole, since some partitions of a
    table stored whole cannot be replaced."""
    if not stored.exists(layout, "silver", DIGESTS_TABLE):
        return False
    options = storage_options(layout.data_root)
    for table in [*SILVER_KEYS, *map(piece_table, PIECES)]:
        delta = delta_cache.latest(stored.table_uri(layout, "silver", table), options)
        if delta is not None and delta.metadata().partition_columns != [PARTITION]:
            return False
    return True


def plan_silver(settings: Settings, times: SilverTimes | None = None) -> Plan:
    """Every source's units placed, every partition's input digest, the stale partitions; each
    source's planning timed into `times` when given."""
    layout = Layout(settings.data_root)
    scheme = silver_scheme(settings)
    sources, inputs, links, groups, prompts = {}, [], [], [], []
    for source in SOURCES:
        started = time.perf_counter()
        found = _source(source, layout, settings, scheme)
        if times is not None:
            times.add(source, time.perf_counter() - started)
        sources[source] = found[0]
        inputs.append(found[1])
        links.append(found[2])
        groups.append(found[3])
        prompts.append(found[4].with_columns(source=pl.lit(source)))
    units = pl.concat(inputs)
    near, signatures = _near_duplicates(pl.concat(prompts), layout, settings)
    partition_map, unit_map = _place(
        units,
        pl.concat(links),
        pl.concat(groups),
        layout,
        settings,
    )
    per_partition = unit_map.group_by(PARTITION).agg(
        pl.concat_str("source", pl.lit(_SEP), "unit", pl.lit(_SEP), "inputs")
        .sort()
        .str.join("\x1e")
        .alias("_all")
    )
    digests = per_partition.select(
        PARTITION,
        **{INPUTS: sha256_hex(pl.lit(scheme) + pl.col("_all"))},
    ).sort(PARTITION)
    # silver's record at its newest version, partition runs' commits included; a partition
    # marked pending (its inputs null) was being rewritten by a process that did not finish
    recorded = committed_silver_record(layout)
    whole = recorded is None or not _stored_in_partitions(layout)
    # made whole: every partition is transformed (the first group rewrites the tables whole)
    before = pl.DataFrame(schema=RECORD_SCHEMA) if whole or recorded is None else recorded
    same = digests.join(before, on=[PARTITION, INPUTS], how="semi").get_column(PARTITION)
    now = set(digests.get_column(PARTITION))
    gone = set(before.get_column(PARTITION)) - now
    stale = (now - set(same)) | gone
    optouts = not load_optouts(settings.raw_root)[0].is_empty()
    if optouts:
        # what the registry withholds from the tables stored whole (a context only withheld
        # decisions use, a quarantine row naming a withheld episode) is known from every
        # partition: all are transformed again
        stale |= now
    near = (
        near.join(unit_map.select("source", "unit", partition=PARTITION), on=["source", "unit"])
        .select(episode_id="unit", dedup_cluster="dedup_cluster", partition="partition")
        .cast(NEAR)
        .sort("episode_id")
    )
    units = unit_map.drop("inputs")
    return Plan(
        sources,
        partition_map,
        units,
        digests,
        sorted(stale),
        whole,
        record=before,
        optouts=optouts,
        near_duplicates=near,
        signatures=signatures,
    )


def _near_duplicates(
    prompts: pl.DataFrame, layout: Layout, settings: Settings
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(source, unit, dedup_cluster) of every unit with a prompt, and the signatures to store:
    only prompts whose key silver's stored signatures lack are signed (splits/near_dups.py).
    A unit is its episode's id in every source with `unit_prompts`."""
    stored_signatures = stored.read(layout, "silver", SIGNATURES_TABLE, schema=STORED_SCHEMA)
    keyed = prompts.select(unit=pl.col("source") + _SEP + pl.col("unit"), text="text")
    found, signatures = prompt_clusters(keyed, stored_signatures, settings.splits.near_duplicates)
    split = pl.col("unit").str.split_exact(_SEP, 1)
    near = found.select(
        source=split.struct.field("field_0"),
        unit=split.struct.field("field_1"),
        dedup_cluster="dedup_cluster",
    )
    return near, signatures
