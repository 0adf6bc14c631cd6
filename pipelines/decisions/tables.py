"""The silver and gold tables decision time travel reads: the one place that reads them."""

from __future__ import annotations

import polars as pl

from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

SILVER_TABLES = ("episodes", "decisions", "turns", "contexts", "feedback")
GOLD_TABLES = ("turn_rewards",)


def built(layout: Layout, *layers: str) -> bool:
    """Whether every layer named has a published snapshot."""
    return all(stored.snapshot(layout, layer) is not None for layer in layers)


def read_decision_tables(
    layout: Layout,
) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    """(silver, gold) tables the decision prompt builder needs, as published now."""
    silver = {table: stored.read(layout, "silver", table) for table in SILVER_TABLES}
    gold = {table: stored.read(layout, "gold", table) for table in GOLD_TABLES}
    return silver, gold


def read_replays(layout: Layout) -> pl.DataFrame:
    """The silver `replays` table (empty before any replay result was ingested)."""
    from pipelines.schemas import silver_schema

    return stored.read(layout, "silver", "replays", schema=silver_schema("replays"))
