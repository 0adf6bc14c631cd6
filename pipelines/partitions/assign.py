"""Which partition each split group lives in: (landing batch, shard), sticky once assigned.

A group's partition is fixed the first time a build sees it: the build's landing batch (one more
than the last batch that assigned a group) and a shard = which of the batch's equal slices of the
bucket range holds its bucket. So new data lands in new partitions (a 1 % change touches about 1 %
of them, where hashing groups alone would touch nearly all: DESIGN §8), and late feedback for an old
group changes only that group's partition. A partition holds groups of every split: the split is a
column of the rows that need it (the release's files are cut by it, release/build/staged.py), not
part of the key, so a small nightly batch is one partition, not one per split.

How many slices a batch gets: a fixed count (`[partitions] shards = N`), or, with `shards = "auto"`,
one per `episodes_per_partition` episodes of the batch's new groups (at least 1, at most
MAX_SIZED_SHARDS), so a big first build gets many partitions and a small later batch one. The count
is used once, when the batch's groups are assigned; the map then holds each group's partition.
A change of salt, ratios, `link_raters`, fixed count, between fixed and "auto", or of the engine
(storage/engine.py) reassigns every group (batch 0); a change of `episodes_per_partition` does not
(it sizes later batches only).
"""

from __future__ import annotations

import math

import polars as pl

from pipelines.config.splits import N_BUCKETS, SplitConfig
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part

PARTITION = "_partition"  # the partition column of partitioned Delta tables
MAP_SCHEMA = pl.Schema(
    {"group_id": pl.String, "batch": pl.Int64, PARTITION: pl.String, "scheme": pl.String}
)
AUTO = "auto"  # `[partitions] shards = "auto"`: shards of each batch sized by its episodes
MAX_SIZED_SHARDS = 999  # per batch; keys stay `s<3 digits>` at most
Shards = int | str  # a fixed count (1-64) or AUTO


def scheme_of(config: SplitConfig, shards: Shards) -> str:
    """What partition keys are a function of besides the batch: a different scheme reassigns.
    With AUTO the per-batch count is not part of it: a later batch sized differently keeps the
    groups already assigned. The engine digest is: another engine may place groups otherwise
    (a kept map would then mix two placements)."""
    parts = [config.salt, config.ratios, shards, engine_digest()]
    if not config.link_raters:  # only when off: data roots built before the setting keep their map
        parts.append("raters not linked")
    return fingerprint([json_part(parts)])[:12]


def shard_expr(shards: int) -> pl.Expr:
    """Shard of `bucket` within the whole bucket range: [0, shards)."""
    return (pl.col("bucket") * shards // N_BUCKETS).clip(0, shards - 1)


def sized_shards(fresh: pl.DataFrame, per_partition: int) -> int:
    """Shards for a batch's new groups (`fresh`: `episodes` per group when known, else one
    each): ceil(episodes / per_partition), within [1, MAX_SIZED_SHARDS]. A group counts at most
    `per_partition` episodes: it is never cut, so a bigger one fills one slice whatever its size,
    and counting it whole would spread the other groups over slices that end up far under the
    target (one group holding 2/3 of a corpus: 87 slices of ~570 episodes)."""
    weight = (
        pl.col("episodes").clip(upper_bound=per_partition)
        if "episodes" in fresh.columns
        else pl.lit(1)
    )
    total = int(fresh.select(weight.sum()).item() or 0)
    return min(MAX_SIZED_SHARDS, max(1, math.ceil(total / per_partition)))


def partition_key(batch: pl.Expr, shard: pl.Expr) -> pl.Expr:
    """`b00003-s01`: sorts by batch; only characters safe in a Hive path segment."""
    return pl.format(
        "b{}-s{}",
        batch.cast(pl.String).str.zfill(5),
        shard.cast(pl.String).str.zfill(2),
    )


def with_episodes(splits: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """`splits` with `episodes`: how many rows of `episodes` (episode_id, group_id) each group has,
    what AUTO sizes batches by."""
    counts = episodes.group_by("group_id").agg(pl.len().cast(pl.Int64).alias("episodes"))
    return splits.join(counts, on="group_id", how="left").with_columns(
        pl.col("episodes").fill_null(0)
    )


def assign_partitions(
    splits: pl.DataFrame,
    previous: pl.DataFrame,
    config: SplitConfig,
    shards: Shards,
    per_partition: int = 1,
) -> pl.DataFrame:
    """`splits` (group_id, bucket; `episodes` per group for AUTO, see `with_episodes`) and the
    previous map → the map (MAP_SCHEMA), one row per group of `splits`, sorted by group_id.
    Groups already mapped under the same scheme keep their partition; the others get the next
    batch, cut into `shards` slices of the bucket range (AUTO: `sized_shards` by
    `per_partition`)."""
    scheme = scheme_of(config, shards)
    kept = previous.filter(pl.col("scheme") == scheme).select(MAP_SCHEMA.names())
    known = splits.select("group_id").join(kept, on="group_id", how="inner")
    fresh = splits.join(kept.select("group_id"), on="group_id", how="anti")
    last = kept.get_column("batch").max()
    batch = 0 if last is None else int(last) + 1  # type: ignore[arg-type]
    count = sized_shards(fresh, per_partition) if shards == AUTO else int(shards)
    assigned = fresh.select(
        "group_id",
        batch=pl.lit(batch, pl.Int64),
        **{PARTITION: partition_key(pl.lit(batch, pl.Int64), shard_expr(count))},
        scheme=pl.lit(scheme),
    )
    return pl.concat([known, assigned]).cast(MAP_SCHEMA).sort("group_id")
