"""Datasets of one partition (tables stored in partitions, DESIGN §8), and what the global rules
need from them as small key frames.

Every dataset builder is group-local: it joins a row only with rows of its own episode or split
group (`rated_alternative_pairs` pairs within a group, on purpose), so the datasets of a partition,
built from that partition's silver and gold alone, are exactly its rows of the datasets built from
all of them at once. The exceptions read tables that are not partitioned: `contexts`
(content-addressed, so a partition reads only the contexts its decisions name) and the splits (each
group's row).
The global rules (duplicate prompts across splits, the split proof) run on the key frames of every
partition; the subject ids pseudonymized in text are global too (privatize/partitions.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import polars as pl

from pipelines.exports.datasets import DATASETS, build_datasets
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.partitions.assign import MAP_SCHEMA, PARTITION
from pipelines.partitions.rows import DIGESTS_SCHEMA, GOLD_KEYS, SILVER_KEYS
from pipelines.partitions.store import MAP_TABLE, row_digests
from pipelines.privacy.known_names import known_names
from pipelines.release.build.frames import (
    KEY_SCHEMA,
    KEYS,
    PARTICIPANTS,
    TEXTS,
    distinct_texts,
    key_frame,
)
from pipelines.release.build.units import build_units, index_key, indexed
from pipelines.release.privatize.known_names import KNOWN_NAMES
from pipelines.release.store import part_cache
from pipelines.release.store.files import SPLIT_ORDER
from pipelines.splits.assign import human_participants, released_splits, split_digests
from pipelines.splits.near_dups import NEAR_DUPS_SCHEMA, NEAR_DUPS_TABLE
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout

UNPLACED = "unplaced"  # rows with no split group (partitions/rows.py): no dataset holds them
# Silver rows of the partitions read together (one read per table, rows split back per partition):
# a table read costs ~13 ms however few rows it holds; a bundle this size holds ~4 partitions
# of the auto sizing's target, so reading it together does not hold much more than one.
BUNDLE_ROWS = 200_000


@dataclass(frozen=True)
class Partition:
    key: str  # `b00003-s01`
    batch: int  # the landing batch (release files are cut by batch and shard: staged.py)
    inputs: str  # digest of the partition's silver and gold rows and its groups' splits
    rows: int  # its silver rows (reads are bundled by them)
    home: str = ""  # of a unit (units.py): its partition's key


def partitions_in_force(layout: Layout, as_of: datetime | None = None) -> list[Partition]:
    """Every placed partition of the silver snapshot in force, with its input digest."""
    silver = row_digests(layout, "silver", as_of)
    if silver is None:
        return [_one_partition(layout, as_of)]
    gold = row_digests(layout, "gold", as_of)
    gold = pl.DataFrame(schema=DIGESTS_SCHEMA) if gold is None else gold
    joined = silver.join(
        gold.select(PARTITION, gold=pl.col("digest")), on=PARTITION, how="left"
    ).filter(pl.col(PARTITION) != UNPLACED)
    assigned = _split_digests(layout, as_of)
    return [
        Partition(
            key,
            int(key.split("-", 1)[0][1:]),
            fingerprint([digest, gold or "", assigned.get(key, "")]),
            rows,
        )
        for key, digest, gold, rows in joined.select(PARTITION, "digest", "gold", "rows")
        .sort(PARTITION)
        .rows()
    ]


def _near_duplicates(layout: Layout, as_of: datetime | None) -> pl.DataFrame:
    """Silver's `_near_duplicates` (episode_id, dedup_cluster, partition); empty when none."""
    return stored.read(layout, "silver", NEAR_DUPS_TABLE, as_of, schema=NEAR_DUPS_SCHEMA)


def _split_digests(layout: Layout, as_of: datetime | None) -> dict[str, str]:
    """Each partition's digest of its groups' splits and its episodes' near-duplicate clusters
    (splits/assign.py `split_digests`): neither is a function of the partition's rows alone."""
    if not stored.exists(layout, "gold", "splits", as_of):
        return {}
    placed = stored.read(layout, "silver", MAP_TABLE, as_of, schema=MAP_SCHEMA)
    splits = split_digests(placed, stored.read(layout, "gold", "splits", as_of), PARTITION)
    near = _near_duplicates(layout, as_of)
    line = pl.concat_str("episode_id", "dedup_cluster", separator="\x1f")
    clusters = near.group_by("partition").agg(line.sort().str.join("\x1e").alias("_rows"))
    for key, rows in clusters.iter_rows():
        splits[key] = fingerprint([splits.get(key, ""), rows])
    return splits


def _one_partition(layout: Layout, as_of: datetime | None) -> Partition:
    """Silver stored whole (by an earlier version; an as-of release reads it): one partition
    (storage/tables.py `ONE_PARTITION`), its inputs the bytes of its tables."""
    tables = [("silver", t) for t in SILVER_KEYS] + [("gold", t) for t in GOLD_KEYS]
    content = [stored.content_digest(layout, layer, t, as_of) for layer, t in tables]
    rows = stored.scan(layout, "silver", "episodes", as_of).select(pl.len()).collect().item()
    return Partition(stored.ONE_PARTITION, 0, fingerprint(content), rows)


def build_key(partition: Partition, config: dict) -> str:
    """What a partition's built datasets are a function of: its rows, the config, the code."""
    return fingerprint([partition.inputs, json_part(config), engine_digest()])


def bundles(partitions: list[Partition], rows: int = BUNDLE_ROWS) -> list[list[Partition]]:
    """`partitions` in order, cut into runs of at most `rows` silver rows (a bigger partition
    alone)."""
    out: list[list[Partition]] = []
    total = rows
    for partition in partitions:
        if total + partition.rows > rows:
            out.append([])
            total = 0
        out[-1].append(partition)
        total += partition.rows
    return out


def _split_by_partition(frame: pl.DataFrame, keys: list[str]) -> dict[str, pl.DataFrame]:
    """Each partition's rows of a frame read with its PARTITION column, in the order read."""
    parts = frame.partition_by(PARTITION, as_dict=True, maintain_order=True)
    empty = frame.head(0).drop(PARTITION)
    return {key: parts[(key,)].drop(PARTITION) if (key,) in parts else empty for key in keys}


def _tables(
    layout: Layout,
    keys: list[str],
    as_of: datetime | None,
    contexts: pl.LazyFrame,
    splits: pl.DataFrame,
    near: pl.DataFrame,
) -> Iterator[tuple[str, dict[str, pl.DataFrame], dict[str, pl.DataFrame]]]:
    """(partition, its silver, its gold) of every partition of `keys`, each table read once for
    them all."""
    read = {
        (layer, t): _split_by_partition(
            stored.read(layout, layer, t, as_of, partitions=keys, with_partition=True), keys
        )
        for layer, names in (("silver", SILVER_KEYS), ("gold", GOLD_KEYS))
        for t in names
        if layer == "silver" or stored.exists(layout, layer, t, as_of)
    }
    # the contexts table scanned once per bundle, not once per partition
    named = pl.concat([read["silver", "decisions"][key].select("context_hash") for key in keys])
    named_now = contexts.join(named.unique().lazy(), on="context_hash", how="semi").collect()
    for key in keys:
        # taken out of `read`: a partition cut into chunks lets go of its rows (units.py)
        silver = {t: read["silver", t].pop(key) for t in SILVER_KEYS}
        gold = {t: read["gold", t].pop(key) for t in GOLD_KEYS if ("gold", t) in read}
        named = silver["decisions"].select("context_hash").unique()
        silver["contexts"] = named_now.join(named, on="context_hash", how="semi")
        groups = silver["episodes"].select("group_id").unique()
        gold["splits"] = released_splits(splits).join(groups, on="group_id", how="semi")
        # by its episodes, not the partition column: tables stored whole are one partition
        mine = silver["episodes"].select("episode_id")
        silver[NEAR_DUPS_TABLE] = near.join(mine, on="episode_id", how="semi").drop("partition")
        yield key, silver, gold


def build_partition(
    silver: dict[str, pl.DataFrame],
    gold: dict[str, pl.DataFrame],
    options: DatasetOptions,
    rated_out: list[pl.DataFrame] | None = None,
) -> tuple[dict, dict[str, pl.DataFrame]]:
    """(meta, frames) of one partition (or chunk of one: `rated_out`, see `build_datasets`) from
    its tables: its datasets (unprivatized, as built), their key frame and the human participants
    of its episodes."""
    left_out: dict[str, dict[str, int]] = {}
    datasets = build_datasets(silver, gold, gold["splits"], options, left_out, rated_out)
    frames = datasets | {
        KEYS: key_frame(datasets),
        PARTICIPANTS: human_participants(silver),
        TEXTS: distinct_texts(datasets),
        KNOWN_NAMES: known_names(silver),
    }
    return {"left_out": left_out}, frames


class Built(NamedTuple):
    units: list[Partition]  # every partition's units, in partition order
    entries: dict[str, str]  # unit → its built entry
    metas: dict[str, dict]  # unit → its built entry's meta
    held: dict[str, dict[str, pl.DataFrame]]  # frames of units built now the store cannot keep
    indexes: list[str]  # every partition's index entry


def _unit(p: Partition, unit: str, entry: str) -> Partition:
    return replace(p, key=unit, inputs=entry, home=p.key)


def built(
    layout: Layout,
    root: Path | None,
    partitions: list[Partition],
    config: dict,
    as_of: datetime | None,
    options: DatasetOptions,
) -> Built:
    """Build every unit (units.py) not in the store. Partitions are built one by one, their tables
    read a bundle at a time; a partition whose index entry is stored is not read. One
    `build_datasets` over a bundle costs no less CPU (100 MB long_jsonl, 30 partitions: 10.7 s
    built one by one, 10.8 s all at once, 2026-11-30: the builders' cost follows the rows), and
    a partition's rows of it would not be its entry as built alone: the left-out counts are of
    all rows together, and builders that join without keeping order (sft's targets and
    messages) put a partition's rows in an order that depends on the others."""
    whole = {p.key: build_key(p, config) for p in partitions}
    found = {p.key: indexed(root, index_key(p.key, whole[p.key])) for p in partitions}
    units: dict[str, list[tuple[str, str]]] = {k: v for k, v in found.items() if v is not None}
    metas = {
        unit: part_cache.load(root, entry, names=())[0]
        for listed in units.values()
        for unit, entry in listed
    }
    held: dict[str, dict[str, pl.DataFrame]] = {}
    pending = [p for p in partitions if p.key not in units]
    if pending:
        contexts = stored.scan(layout, "silver", "contexts", as_of).select(
            "context_hash", "context"
        )
        splits = stored.read(layout, "gold", "splits", as_of)
        near = _near_duplicates(layout, as_of)
        code = fingerprint([json_part(config), engine_digest()])
        make = lambda silver, gold, rated_out: build_partition(silver, gold, options, rated_out)
        for bundle in bundles(pending):
            tables = _tables(layout, [p.key for p in bundle], as_of, contexts, splits, near)
            for key, silver, gold in tables:
                made = build_units(root, key, whole[key], silver, gold, code, make)
                del silver, gold
                units[key] = [(u.key, u.entry) for u in made]
                metas |= {u.key: u.meta for u in made}
                held |= {u.key: u.frames for u in made if u.frames is not None}
    out = [_unit(p, unit, entry) for p in partitions for unit, entry in units[p.key]]
    indexes = [index_key(p.key, whole[p.key]) for p in partitions]
    return Built(out, {p.key: p.inputs for p in out}, metas, held, indexes)


def kept_rows(keys: pl.DataFrame) -> pl.DataFrame:
    """`keys` (KEY_SCHEMA plus PARTITION) with `keep` and `duplicate_row`: an exact prompt is kept
    only in its earliest split (train, then validation, then test), across all datasets and
    partitions (a row without a prompt hash is not kept); of the kept rows of one dataset with the
    same `row_hash` (the same prompt and answer) only the one of the smallest episode id is kept
    (then the earliest row: where the partitions are cut does not decide), the others are
    `duplicate_row`."""
    # flags computed over windows and added as columns: joining or sorting the whole frame would
    # copy every string of it (1.2 M rows at 1 GB of raw data, the release's peak)
    rank = {split: i for i, split in enumerate(SPLIT_ORDER)}
    split_rank = pl.col("split").replace_strict(rank, default=len(rank), return_dtype=pl.Int32)
    keep = pl.col("prompt_hash").is_not_null() & (
        split_rank == split_rank.min().over("prompt_hash")
    )
    order = ["episode_id", *([PARTITION] if PARTITION in keys.columns else []), "row"]
    same = ["dataset", "row_hash", "_keep"]
    first = pl.col("_position").min().over(same)
    duplicate = pl.col("_keep") & pl.col("row_hash").is_not_null() & (pl.col("_position") > first)
    return (
        keys.with_columns(
            _keep=keep.fill_null(False),
            _position=pl.arg_sort_by(order, nulls_last=True).arg_sort(),
        )
        .with_columns(duplicate_row=duplicate)
        .with_columns(keep=pl.col("_keep") & ~pl.col("duplicate_row"))
        .select(*keys.columns, "keep", "duplicate_row")
    )


def dropped_counts(keys: pl.DataFrame) -> dict[str, int]:
    """Rows left out per dataset as duplicate prompts across splits."""
    gone = keys.filter(~pl.col("keep") & ~pl.col("duplicate_row"))
    counts = dict(gone.group_by("dataset").len().iter_rows())
    return {name: int(counts.get(name, 0)) for name in DATASETS}


def duplicate_row_counts(keys: pl.DataFrame) -> dict[str, int]:
    """Rows left out per dataset as exact duplicates of a kept row (`kept_rows`)."""
    counts = dict(keys.filter(pl.col("duplicate_row")).group_by("dataset").len().iter_rows())
    return {name: int(counts.get(name, 0)) for name in DATASETS}


def proof_frames(keys: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The kept rows' (group, split, prompt, episode) per dataset: all the split proof reads."""
    columns = [c for c in KEY_SCHEMA.names()[2:] if c != "row_hash"]
    # the columns chosen before the rows: filtering copies every column it keeps
    kept = keys.select("dataset", *columns, "keep").filter(pl.col("keep"))
    return {name: kept.filter(pl.col("dataset") == name).select(columns) for name in DATASETS}


def summed_left_out(metas: dict[str, dict]) -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = {}
    for meta in metas.values():
        for name, counts in meta["left_out"].items():
            into = total.setdefault(name, {})
            for reason, n in counts.items():
                into[reason] = into.get(reason, 0) + n
    return {name: dict(sorted(c.items())) for name, c in sorted(total.items())}
