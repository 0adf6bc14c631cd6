"""Scenario silver units: one per scenario folder id (`scenario:<scenario_id>`, its episode id).

Every scenario transform step groups by scenario_id (choosing among a scenario's copies, turn
positions, revisions, metadata), so a scenario's copies in several state folders share a unit.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.transforms.scenario.common import episode_id
from pipelines.transforms.units import GROUPS_SCHEMA, LINKS_SCHEMA, UNIT

# the stored column each table's rows are read by (transforms/units.py SCAN_KEYS)
SCAN_KEYS = {"scenario_entries": "scenario_id", "scenario_metadata": "scenario_id"}


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    return {table: frame.with_columns(episode_id().alias(UNIT)) for table, frame in bronze.items()}


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    return pl.LazyFrame(schema=LINKS_SCHEMA)


def unit_groups(
    bronze: dict[str, pl.LazyFrame], settings: Settings, evidence: dict[str, pl.LazyFrame]
) -> pl.LazyFrame:
    """unit, group_id: a scenario is its own split group (`group_id` = its folder id)."""
    tagged = unit_keys(bronze, settings).values()
    frames = [f.select(unit=UNIT, group_id="scenario_id") for f in tagged]
    if not frames:
        return pl.LazyFrame(schema=GROUPS_SCHEMA)
    found = pl.concat(frames).unique()
    return found.with_columns(episodes=pl.lit(1)).cast(dict(GROUPS_SCHEMA))
