"""Datasets of one partition (tables stored in partitions, DESIGN §8), and what the global rules
need from them as small key frames.

Every dataset builder is group-local: it joins a row only with rows of its own episode or split
group (`rated_alternative_pairs` pairs within a group, on purpose), so the datasets of a partition,
built from that partition's silver and gold alone, are exactly its rows of the datasets built from
whole tables. The exceptions read tables that are not partitioned: `contexts` (content-addressed,
so a partition reads only the contexts its decisions name) and the splits (each group's row).
The global rules (duplicate prompts across splits, the split proof) run on the key frames of every
partition; the subject ids pseudonymized in text are global too (part_privatize.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from pipelines.exports.datasets import DATASETS, build_datasets
from pipelines.exports.datasets.common import DatasetOptions
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.rows import DIGESTS_SCHEMA, GOLD_KEYS, SILVER_KEYS
from pipelines.partitions.store import DIGESTS_TABLE
from pipelines.release import part_cache
from pipelines.release.files import SPLIT_ORDER
from pipelines.release.text_leaves import is_textual, string_leaves
from pipelines.splits.assign import human_participants
from pipelines.storage import tables as stored
from pipelines.storage.fingerprint import code_digest, fingerprint, json_part
from pipelines.storage.layout import Layout

# an entry's frames besides the datasets (TEXTS: every distinct string in them)
KEYS, PARTICIPANTS, TEXTS = "_keys", "_participants", "_texts"
KEY_SCHEMA = pl.Schema(
    {
        "dataset": pl.String,
        "row": pl.UInt32,
        "prompt_hash": pl.String,
        "split": pl.String,
        "group_id": pl.String,
        "episode_id": pl.String,
    }
)
UNPLACED = "unplaced"  # rows with no split group (partitions/rows.py): no dataset holds them
_PIPELINES = Path(__file__).resolve().parents[1]
_BUILD_CODE = (_PIPELINES / "exports", _PIPELINES / "splits", Path(__file__))
# Silver rows of the partitions read together (one read per table, rows split back per partition):
# a table read costs ~13 ms however few rows it holds; a bundle this size holds ~4 partitions
# of the auto sizing's target, so reading it together does not hold much more than one.
BUNDLE_ROWS = 200_000


@dataclass(frozen=True)
class Partition:
    key: str  # `b00003-train-s01`
    batch: int  # the landing batch (release files are cut by batch and shard: staged.py)
    inputs: str  # digest of the partition's silver and gold rows
    rows: int  # its silver rows (reads are bundled by them)


def partitions_in_force(layout: Layout, as_of: datetime | None = None) -> list[Partition]:
    """Every placed partition of the silver snapshot in force, with its input digest."""
    silver = stored.read(layout, "silver", DIGESTS_TABLE, as_of, schema=DIGESTS_SCHEMA)
    gold = pl.DataFrame(schema={PARTITION: pl.String, "digest": pl.String})
    if stored.exists(layout, "gold", DIGESTS_TABLE, as_of):
        gold = stored.read(layout, "gold", DIGESTS_TABLE, as_of, with_partition=True)
    joined = silver.join(
        gold.select(PARTITION, gold=pl.col("digest")), on=PARTITION, how="left"
    ).filter(pl.col(PARTITION) != UNPLACED)
    return [
        Partition(key, int(key.split("-", 1)[0][1:]), fingerprint([digest, gold or ""]), rows)
        for key, digest, gold, rows in joined.select(PARTITION, "digest", "gold", "rows")
        .sort(PARTITION)
        .rows()
    ]


def build_key(partition: Partition, config: dict) -> str:
    """What a partition's built datasets are a function of: its rows, the config, the code."""
    return fingerprint([partition.inputs, json_part(config), code_digest(*_BUILD_CODE)])


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
    """Each partition's rows of a frame read with its PARTITION column, in the order read (a table
    stored whole has no partition's rows, as a read of named partitions finds none)."""
    if PARTITION not in frame.columns:
        return dict.fromkeys(keys, frame.head(0))
    parts = frame.partition_by(PARTITION, as_dict=True, maintain_order=True)
    empty = frame.head(0).drop(PARTITION)
    return {key: parts[(key,)].drop(PARTITION) if (key,) in parts else empty for key in keys}


def _tables(
    layout: Layout,
    keys: list[str],
    as_of: datetime | None,
    contexts: pl.LazyFrame,
    splits: pl.DataFrame,
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
        silver = {t: read["silver", t][key] for t in SILVER_KEYS}
        gold = {t: read["gold", t][key] for t in GOLD_KEYS if ("gold", t) in read}
        named = silver["decisions"].select("context_hash").unique()
        silver["contexts"] = named_now.join(named, on="context_hash", how="semi")
        groups = silver["episodes"].select("group_id").unique()
        gold["splits"] = splits.join(groups, on="group_id", how="semi")
        yield key, silver, gold


def _key_frame(datasets: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per dataset row: what the duplicate-prompt rule and the split proof read."""
    frames = [pl.DataFrame(schema=KEY_SCHEMA)]
    for name, frame in datasets.items():
        present = [c for c in KEY_SCHEMA.names()[2:] if c in frame.columns]
        frames.append(
            frame.select(
                dataset=pl.lit(name),
                row=pl.int_range(pl.len(), dtype=pl.UInt32),
                **{c: pl.col(c).cast(pl.String) for c in present},
            )
        )
    return pl.concat(frames, how="diagonal").select(KEY_SCHEMA.names()).cast(KEY_SCHEMA)


def _distinct_texts(datasets: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Every distinct string of the datasets, however nested: all a later release reads of this
    entry to tell whether a subject id that came or went occurs in it (part_release.py)."""
    leaves = [
        string_leaves(frame, [c for c, t in frame.schema.items() if is_textual(t)])
        for frame in datasets.values()
    ]
    return pl.concat([pl.Series("text", [], dtype=pl.String), *leaves]).unique().to_frame("text")


def build_partition(
    silver: dict[str, pl.DataFrame], gold: dict[str, pl.DataFrame], options: DatasetOptions
) -> tuple[dict, dict[str, pl.DataFrame]]:
    """(meta, frames) of one partition from its tables: its datasets (unprivatized, as built),
    their key frame and the human participants of its episodes."""
    left_out: dict[str, dict[str, int]] = {}
    datasets = build_datasets(silver, gold, gold["splits"], options, left_out)
    frames = datasets | {
        KEYS: _key_frame(datasets),
        PARTICIPANTS: human_participants(silver),
        TEXTS: _distinct_texts(datasets),
    }
    return {"left_out": left_out}, frames


def built(
    layout: Layout,
    root: Path | None,
    partitions: list[Partition],
    config: dict,
    as_of: datetime | None,
    options: DatasetOptions,
) -> tuple[dict[str, str], dict[str, dict], dict[str, pl.DataFrame]]:
    """Build every partition whose entry is not in the store: (partition → entry key, partition →
    meta, frames of partitions built now that the store could not keep). Partitions are built
    one by one (one `build_datasets` over a bundle measured slower than one per partition), their
    tables read a bundle at a time."""
    keys = {p.key: build_key(p, config) for p in partitions}
    metas = {p.key: part_cache.load(root, keys[p.key], names=())[0] for p in partitions}
    pending = [p for p in partitions if not metas[p.key]]
    if not pending:
        return keys, metas, {}
    contexts = stored.scan(layout, "silver", "contexts", as_of).select("context_hash", "context")
    splits = stored.read(layout, "gold", "splits", as_of)
    held = {}
    for bundle in bundles(pending):
        tables = _tables(layout, [p.key for p in bundle], as_of, contexts, splits)
        for key, silver, gold in tables:
            meta, frames = build_partition(silver, gold, options)
            del silver, gold
            part_cache.save(root, keys[key], meta, frames)
            metas[key] = meta | {"fresh": True}
            if root is None:
                held[key] = frames
    return keys, metas, held


def kept_rows(keys: pl.DataFrame) -> pl.DataFrame:
    """`keys` (KEY_SCHEMA plus PARTITION) with `keep`: an exact prompt is kept only in its earliest
    split (train, then validation, then test), across all datasets and partitions, as
    `assemble.drop_prompt_duplicates` keeps it (a row without a prompt hash is not kept there)."""
    rank = {split: i for i, split in enumerate(SPLIT_ORDER)}
    ranked = keys.with_columns(
        _rank=pl.col("split").replace_strict(rank, default=len(rank), return_dtype=pl.Int32)
    )
    first = ranked.group_by("prompt_hash").agg(pl.col("_rank").min().alias("_first"))
    joined = ranked.join(first, on="prompt_hash", how="left", maintain_order="left")
    return joined.with_columns(keep=(pl.col("_rank") == pl.col("_first")).fill_null(False)).drop(
        "_rank", "_first"
    )


def dropped_counts(keys: pl.DataFrame) -> dict[str, int]:
    counts = dict(keys.filter(~pl.col("keep")).group_by("dataset").len().iter_rows())
    return {name: int(counts.get(name, 0)) for name in DATASETS}


def proof_frames(keys: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The kept rows' (group, split, prompt, episode) per dataset: all the split proof reads."""
    kept = keys.filter(pl.col("keep"))
    return {
        name: kept.filter(pl.col("dataset") == name).select(KEY_SCHEMA.names()[2:])
        for name in DATASETS
    }


def summed_left_out(metas: dict[str, dict]) -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = {}
    for meta in metas.values():
        for name, counts in meta["left_out"].items():
            into = total.setdefault(name, {})
            for reason, n in counts.items():
                into[reason] = into.get(reason, 0) + n
    return {name: dict(sorted(c.items())) for name, c in sorted(total.items())}
