"""`dialogue` silver units (pipelines/transforms/units.py): one per conversation.

Unit: `dialogue:<dataset>/<conversation_id>` (its episode id) for a conversation's every copy and
for every feedback event naming it, known or not (an orphan's quarantine row lives with the
conversation it names and re-appears when that arrives).

Links: `person:<user_id>` (with `[splits] link_raters`) — conversations rated by one human rater
are one split group (`conversations.grouped_by_people`; the bronze holds no user turn actor, so
raters are the only people linking conversations); `event:<event_key>` — one event delivered
naming different conversations keeps one copy (`feedback.dedup_events`).
Evidence: the per-dataset range of `quality` (`conversations.quality_ranges`) whose scale every
rated conversation of the dataset shares; linking them instead would make a dataset one component.
A conversation with a numeric quality reads its dataset's row.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.transforms.dialogue.common import CONVERSATIONS, EVENTS, bronze_table
from pipelines.transforms.dialogue.conversations import dedup_conversations, quality_ranges
from pipelines.transforms.units import LINKS_SCHEMA, UNIT


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    # A null conversation id (an orphan event) still names its dataset: that unit, not null.
    unit = pl.concat_str(pl.lit("dialogue:"), "dataset", pl.lit("/"), "conversation_id")
    fallback = pl.concat_str(pl.lit("dialogue:"), pl.col("dataset").fill_null(""), pl.lit("/"))
    return {
        table: bronze_table(bronze, table).with_columns(pl.coalesce(unit, fallback).alias(UNIT))
        for table in (CONVERSATIONS, EVENTS)
    }


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    events = unit_keys(bronze, settings)[EVENTS]
    copies = events.select(UNIT, link=pl.lit("event:") + pl.col("event_key"))
    spanning = copies.filter(pl.col(UNIT).n_unique().over("link") > 1)
    links = [spanning]
    if settings.splits.link_raters:
        rater = pl.col("extra").str.json_path_match("$.user_id")
        links.append(events.select(UNIT, link=pl.lit("person:") + rater))
    return (
        pl.concat(links)
        .drop_nulls()
        .unique()
        .select(unit=UNIT, link="link")
        .cast(dict(LINKS_SCHEMA))
    )


def unit_evidence(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    kept, _ = dedup_conversations(bronze_table(bronze, CONVERSATIONS))
    return {"quality_ranges": quality_ranges(kept)}


def unit_evidence_reads(
    bronze: dict[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.LazyFrame]:
    rated = unit_keys(bronze, settings)[CONVERSATIONS].filter(pl.col("quality").is_not_null())
    return {"quality_ranges": rated.select(UNIT, "dataset").unique()}
