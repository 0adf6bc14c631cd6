"""A data root as an earlier version left it with `[partitions] shards = 0`: silver's and gold's
tables stored whole (no `_partition` column, no partition bookkeeping), published as a new
snapshot. That version is gone, so tests make its layout from a partitioned build."""

from pathlib import Path

import polars as pl

from pipelines.gold import GOLD_TABLES
from pipelines.partitions.rows import DIGESTS_SCHEMA, SILVER_KEYS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

# silver's partition bookkeeping, which the whole layout did not keep
BOOKKEEPING = ("_partition_map", "_partition_digests", "_partition_inputs")
BOOKKEEPING += ("_piece_contexts", "_piece_quarantine", "_piece_survey_answers")
EARLIER = "inputs digest of an earlier version"  # another engine: never this one's digest


def store_whole(data: Path) -> None:
    """Rewrite the partitioned silver and gold tables of `data` whole, as the earlier version
    published them (gold with an empty, unpartitioned digests table)."""
    layout = Layout(data)
    silver = {t: stored.read(layout, "silver", t) for t in SILVER_KEYS}
    meta = stored.snapshot(layout, "silver").meta | {stored.INPUTS: EARLIER}
    published = stored.publish(layout, "silver", silver, meta)
    versions = {t: v for t, v in published.versions.items() if t not in BOOKKEEPING}
    whole = stored.Snapshot("silver", versions, published.meta, published.published_at)
    stored.replace_history(layout, "silver", [*stored.history(layout, "silver")[:-1], whole])
    gold: dict[str, pl.DataFrame] = {t: stored.read(layout, "gold", t) for t in GOLD_TABLES}
    gold["_partition_digests"] = pl.DataFrame(schema=DIGESTS_SCHEMA)
    meta = stored.snapshot(layout, "gold").meta | {stored.INPUTS: EARLIER}
    stored.publish(layout, "gold", gold, meta)
    for layer, table in (("silver", "turns"), ("gold", "turn_rewards")):
        assert not stored.partitioned(layout, layer, table)
