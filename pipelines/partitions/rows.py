"""Rows of a partitioned table tagged with their partition, and a digest of each partition's rows.

Tables keyed by episode (or by split group) are partitioned; the others (content-addressed
contexts, quarantine, survey answers) are stored whole. A partition's digest covers its rows in
every partitioned table, independent of row order: a partition whose digest is unchanged is not
rewritten, and gold need not recompute it.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from pipelines.partitions.assign import PARTITION
from pipelines.storage.fingerprint import fingerprint, json_part

# table → the column that places its rows (an episode id, or a split group id)
SILVER_KEYS = {
    "episodes": "episode_id",
    "turns": "episode_id",
    "feedback": "episode_id",
    "decisions": "episode_id",
    "agent_rounds": "episode_id",
    "replays": "episode_id",
    "policy_states": "group_id",
}
GOLD_KEYS = {
    "turn_rewards": "episode_id",
    "episode_outcomes": "episode_id",
    "quality_signals": "episode_id",
    "agent_round_deltas": "episode_id",
}
DIGESTS_SCHEMA = pl.Schema({PARTITION: pl.String, "digest": pl.String, "rows": pl.Int64})
_SEED = 0x7475726E6C616B65  # fixed: digests compare across builds


def tag(
    frames: Mapping[str, pl.DataFrame],
    keys: Mapping[str, str],
    places: Mapping[str, pl.DataFrame],
) -> dict[str, pl.DataFrame]:
    """Each partitioned table with its `_partition` column; a row whose key has no place (an
    orphan) lands in partition "unplaced" so it is stored, never dropped."""
    tagged = {}
    for table, frame in frames.items():
        key = keys[table]
        tagged[table] = frame.join(places[key], on=key, how="left", maintain_order="left")
        tagged[table] = tagged[table].with_columns(pl.col(PARTITION).fill_null("unplaced"))
    return tagged


def digests(tagged: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per partition: digest of its rows in every table (order-independent), rows."""
    per_table = []
    for table in sorted(tagged):
        frame = tagged[table]
        hashes = frame.drop(PARTITION).hash_rows(_SEED) if frame.width > 1 else None
        if hashes is None or frame.is_empty():
            continue
        per_table.append(
            frame.select(PARTITION)
            .with_columns(_h=hashes)
            .group_by(PARTITION)
            .agg(
                table=pl.lit(table),
                n=pl.len().cast(pl.Int64),
                s=pl.col("_h").sum(),
                lo=pl.col("_h").min(),
                hi=pl.col("_h").max(),
            )
        )
    if not per_table:
        return pl.DataFrame(schema=DIGESTS_SCHEMA)
    parts = pl.concat(per_table).sort(PARTITION, "table")
    out = []
    for (partition,), group in parts.group_by(PARTITION, maintain_order=True):
        out.append(
            {
                PARTITION: partition,
                "digest": fingerprint([json_part([pl.__version__, group.rows()])]),
                "rows": int(group.get_column("n").sum()),
            }
        )
    return pl.DataFrame(out, schema=DIGESTS_SCHEMA)


def changed(current: pl.DataFrame, previous: pl.DataFrame) -> list[str]:
    """Partitions whose digest differs from the previous one, new ones and vanished ones."""
    joined = current.join(previous, on=PARTITION, how="full", suffix="_prev", coalesce=True)
    moved = joined.filter(pl.col("digest").ne_missing(pl.col("digest_prev")))
    return sorted(moved.get_column(PARTITION).to_list())
