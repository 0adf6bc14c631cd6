"""The silver and gold tables decision time travel reads: the one place that reads them."""

from __future__ import annotations

import polars as pl

from pipelines.storage.files import read_table
from pipelines.storage.layout import Layout

SILVER_TABLES = ("episodes", "decisions", "turns", "contexts", "feedback")
GOLD_TABLES = ("turn_rewards",)


def read_decision_tables(
    layout: Layout,
) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    """(silver, gold) tables the decision prompt builder needs, as published now."""
    silver = {table: read_table(layout.silver(table)) for table in SILVER_TABLES}
    gold = {table: read_table(layout.gold(table)) for table in GOLD_TABLES}
    return silver, gold


def read_replays(layout: Layout) -> pl.DataFrame:
    """The silver `replays` table (empty before any replay result was ingested)."""
    from pipelines.schemas import silver_schema

    return read_table(layout.silver("replays"), silver_schema("replays"))
