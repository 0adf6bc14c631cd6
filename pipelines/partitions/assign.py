"""Which partition each split group lives in: (landing batch, split, shard), sticky once assigned.

A group's partition is fixed the first time a build sees it: the build's landing batch (one more
than the last batch that assigned a group), the group's split, and a shard = which of `shards` equal
slices of the split's bucket range holds its bucket. So new data lands in new partitions (a 1 %
change touches about 1 % of them, where hashing groups alone would touch nearly all: DESIGN §8), no
partition straddles two splits, and late feedback for an old group changes only that group's
partition. A change of salt, ratios or shard count reassigns every group (batch 0).
"""

from __future__ import annotations

import polars as pl

from pipelines.splits.config import SplitConfig
from pipelines.storage.fingerprint import fingerprint, json_part

PARTITION = "_partition"  # the partition column of partitioned Delta tables
MAP_SCHEMA = pl.Schema(
    {"group_id": pl.String, "batch": pl.Int64, PARTITION: pl.String, "scheme": pl.String}
)


def scheme_of(config: SplitConfig, shards: int) -> str:
    """What partition keys are a function of besides the batch: a different scheme reassigns."""
    return fingerprint([json_part([config.salt, config.ratios, shards])])[:12]


def shard_expr(config: SplitConfig, shards: int) -> pl.Expr:
    """Shard of `bucket` within its `split`'s bucket range: [0, shards)."""
    shard = pl.lit(None, pl.Int64)
    for split, (start, end) in config.bucket_ranges().items():
        width = max(end - start, 1)
        inside = ((pl.col("bucket") - start) * shards // width).clip(0, shards - 1)
        shard = pl.when(pl.col("split") == split).then(inside).otherwise(shard)
    return shard


def partition_key(batch: pl.Expr, split: pl.Expr, shard: pl.Expr) -> pl.Expr:
    """`b00003-train-s1`: sorts by batch; only characters safe in a Hive path segment."""
    return pl.format(
        "b{}-{}-s{}",
        batch.cast(pl.String).str.zfill(5),
        split,
        shard.cast(pl.String).str.zfill(2),
    )


def assign_partitions(
    splits: pl.DataFrame, previous: pl.DataFrame, config: SplitConfig, shards: int
) -> pl.DataFrame:
    """`splits` (group_id, bucket, split) and the previous map → the map (MAP_SCHEMA), one row per
    group of `splits`, sorted by group_id. Groups already mapped under the same scheme keep their
    partition; the others get the next batch."""
    scheme = scheme_of(config, shards)
    kept = previous.filter(pl.col("scheme") == scheme).select(MAP_SCHEMA.names())
    known = splits.select("group_id").join(kept, on="group_id", how="inner")
    fresh = splits.join(kept.select("group_id"), on="group_id", how="anti")
    last = kept.get_column("batch").max()
    batch = 0 if last is None else int(last) + 1  # type: ignore[arg-type]
    assigned = fresh.select(
        "group_id",
        batch=pl.lit(batch, pl.Int64),
        **{
            PARTITION: partition_key(
                pl.lit(batch, pl.Int64), pl.col("split"), shard_expr(config, shards)
            )
        },
        scheme=pl.lit(scheme),
    )
    return pl.concat([known, assigned]).cast(MAP_SCHEMA).sort("group_id")
