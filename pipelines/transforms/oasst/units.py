"""`oasst` silver units (pipelines/transforms/units.py): one per message tree.

Unit: `oasst:<message_tree_id>` (its episode id) for every copy of the tree. The transform looks
at nothing beyond one tree (copies of a tree share its unit; the split unit is the tree), so
there are no links and no evidence.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table
from pipelines.transforms.oasst import TREES
from pipelines.transforms.oasst.messages import episode_id
from pipelines.transforms.units import GROUPS_SCHEMA, LINKS_SCHEMA, UNIT

# the stored column each table's rows are read by (transforms/units.py SCAN_KEYS)
SCAN_KEYS = {TREES: "message_tree_id"}


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    trees = bronze_table(bronze, TREES)
    return {TREES: trees.with_columns(episode_id().alias(UNIT))}


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    return pl.LazyFrame(schema=LINKS_SCHEMA)


def unit_groups(
    bronze: dict[str, pl.LazyFrame], settings: Settings, evidence: dict[str, pl.LazyFrame]
) -> pl.LazyFrame:
    """unit, group_id: a tree is its own split group."""
    trees = unit_keys(bronze, settings)[TREES]
    found = trees.select(unit=UNIT, group_id=UNIT, episodes=pl.lit(1)).unique()
    return found.cast(dict(GROUPS_SCHEMA))


def unit_prompts(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    """unit, text: each tree's root prompt (its first `prompter` message at depth 0), what every
    episode of the tree starts from (splits/near_dups.py); one per tree, whichever copy."""
    trees = unit_keys(bronze, settings)[TREES]
    root = pl.element().struct.field("role").eq("prompter") & pl.element().struct.field("depth").eq(
        0
    )
    first = pl.col("messages").list.eval(pl.element().filter(root).struct.field("text"))
    return trees.select(unit=UNIT, text=first.list.first()).unique("unit", keep="first")
