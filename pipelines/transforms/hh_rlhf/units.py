"""`hh_rlhf` silver units (pipelines/transforms/units.py): one per preference pair.

Unit: `hh_rlhf:<dataset>/<pair_id>` (its episode id) for every copy of the pair. The transform
looks at nothing beyond one pair. Link: `prompt:<prompt_id>` — pairs answering one prompt are one
split group (`episodes.group_id`); the transform does not need it (the group id is the row's
own prompt id), it keeps a split group inside one partition (DESIGN §8).
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table
from pipelines.transforms.hh_rlhf import PAIRS, SOURCE
from pipelines.transforms.units import GROUPS_SCHEMA, LINKS_SCHEMA, UNIT

# the stored column each table's rows are read by (transforms/units.py SCAN_KEYS)
SCAN_KEYS = {PAIRS: "pair_id"}


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    pairs = bronze_table(bronze, PAIRS)
    unit = pl.concat_str(pl.lit(f"{SOURCE}:"), "dataset", pl.lit("/"), "pair_id")
    return {PAIRS: pairs.with_columns(unit.alias(UNIT))}


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    pairs = unit_keys(bronze, settings)[PAIRS]
    return (
        pairs.select(unit=UNIT, link=pl.lit("prompt:") + pl.col("prompt_id"))
        .unique()
        .cast(dict(LINKS_SCHEMA))
    )


def unit_groups(
    bronze: dict[str, pl.LazyFrame], settings: Settings, evidence: dict[str, pl.LazyFrame]
) -> pl.LazyFrame:
    """unit, group_id: a pair's split group is its prompt (`episodes.group_id`)."""
    pairs = unit_keys(bronze, settings)[PAIRS]
    group = pl.lit(f"{SOURCE}:prompt/") + pl.col("prompt_id")
    found = pairs.select(unit=UNIT, group_id=group).unique()
    return found.with_columns(episodes=pl.lit(1)).cast(dict(GROUPS_SCHEMA))


def unit_prompts(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    """unit, text: each pair's first Human turn, where its conversation starts
    (splits/near_dups.py); one per pair, whichever copy."""
    pairs = unit_keys(bronze, settings)[PAIRS]
    human = pl.element().struct.field("role").eq("Human")
    first = pl.col("prompt").list.eval(pl.element().filter(human).struct.field("text"))
    return pairs.select(unit=UNIT, text=first.list.first()).unique("unit", keep="first")
