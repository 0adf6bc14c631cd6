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

Groups that must share a partition (`clusters`: groups of one silver unit's component, linked by a
unit of several, transforms/units.py `group_clusters`) are placed together: a cluster takes the
earliest partition any of its groups had (the others' rows move there), a new one lands as one
group would, by the bucket of its first group and weighed by all its episodes.

With AUTO, two kinds of new cluster get slices of their own after the batch's bucket slices,
because later nights touch them and a partition is transformed again whole: a cluster of more
than a quarter of `episodes_per_partition` (BIG_SHARE; one rater or actor across most of a
source: most nights add to it, and the groups sharing its slice were transformed again with it),
and, in a batch of more than one slice, the clusters that give no episode (orphan events, PRAR
runs: rows that later files add to), one slice for all of them. Measured on the 100 MB bench
mix: its 1 % night transformed 4 of 9 partitions again, 28.8 k of 52 k bronze rows, 9.6 k of
them other groups sharing the slices of the two giant groups (2 551 and 934 episodes; the next
biggest has 11) and 4.5 k a slice holding one orphan rating; now 4 of 10, 15.0 k rows.
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
BIG_SHARE = 4  # with AUTO, a cluster of more than 1/BIG_SHARE of the target gets its own slice
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


def assign_partitions(
    splits: pl.DataFrame,
    previous: pl.DataFrame,
    config: SplitConfig,
    shards: Shards,
    per_partition: int = 1,
    clusters: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """`splits` (group_id, bucket; `episodes` per group for AUTO) and the
    previous map → the map (MAP_SCHEMA), one row per group of `splits`, sorted by group_id.
    Groups already mapped under the same scheme keep their partition; the others get the next
    batch, cut into `shards` slices of the bucket range (AUTO: `sized_shards` by
    `per_partition`). `clusters` (group_id, cluster): groups placed together (module docstring);
    a group it does not name is a cluster of its own."""
    scheme = scheme_of(config, shards)
    kept = previous.filter(pl.col("scheme") == scheme).select(MAP_SCHEMA.names())
    groups = splits.with_columns(
        episodes=pl.col("episodes") if "episodes" in splits.columns else pl.lit(1, pl.Int64)
    )
    named = groups.join(clusters, on="group_id", how="left") if clusters is not None else groups
    named = named.with_columns(
        cluster=pl.coalesce("cluster", "group_id") if "cluster" in named.columns else "group_id"
    )
    # a cluster with a mapped group keeps the earliest partition of its groups
    held = (
        named.join(kept, on="group_id", how="inner")
        .sort(PARTITION)
        .group_by("cluster")
        .agg(pl.col("batch").first(), pl.col(PARTITION).first())
    )
    fresh = (
        named.join(held.select("cluster"), on="cluster", how="anti")
        .sort("group_id")
        .group_by("cluster")
        .agg(pl.col("bucket").first(), pl.col("episodes").sum())
    )
    last = kept.get_column("batch").max()
    batch = 0 if last is None else int(last) + 1  # type: ignore[arg-type]
    placed = _place_fresh(fresh, batch, shards, per_partition)
    return (
        named.select("group_id", "cluster")
        .join(pl.concat([held, placed]), on="cluster", how="inner")
        .select("group_id", "batch", PARTITION, scheme=pl.lit(scheme))
        .cast(MAP_SCHEMA)
        .sort("group_id")
    )


def _place_fresh(
    fresh: pl.DataFrame, batch: int, shards: Shards, per_partition: int
) -> pl.DataFrame:
    """cluster, batch, _partition of a batch's new clusters (cluster, bucket, episodes): cut into
    slices of the bucket range; with AUTO, a cluster of more than 1/BIG_SHARE of `per_partition`
    episodes gets a slice of its own and, when the batch has more than one slice, the clusters
    giving no episode share one (module docstring), numbered after the bucket slices (big ones
    by cluster name)."""
    if shards != AUTO:
        return _by_bucket(fresh, batch, int(shards))
    big = pl.col("episodes") * BIG_SHARE > per_partition
    several = sized_shards(fresh, per_partition) > 1
    loose = (pl.col("episodes") == 0) & pl.lit(several)
    spread = fresh.filter(~big & ~loose)
    count = sized_shards(spread, per_partition) if spread.height else 0
    alone = (
        fresh.filter(big)
        .sort("cluster")
        .with_columns(shard=pl.int_range(count, count + pl.len(), dtype=pl.Int64))
    )
    shared = fresh.filter(loose).with_columns(shard=pl.lit(count + alone.height, pl.Int64))
    own = pl.concat([alone, shared]).select(
        "cluster",
        batch=pl.lit(batch, pl.Int64),
        **{PARTITION: partition_key(pl.lit(batch, pl.Int64), pl.col("shard"))},
    )
    return pl.concat([_by_bucket(spread, batch, count), own]) if count else own


def _by_bucket(fresh: pl.DataFrame, batch: int, count: int) -> pl.DataFrame:
    """cluster, batch, _partition: the batch's `count` equal slices of the bucket range."""
    return fresh.select(
        "cluster",
        batch=pl.lit(batch, pl.Int64),
        **{PARTITION: partition_key(pl.lit(batch, pl.Int64), shard_expr(count))},
    )
