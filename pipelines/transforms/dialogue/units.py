"""`dialogue` silver units (pipelines/transforms/units.py): one per conversation.

Unit: `dialogue:<dataset>/<conversation_id>` (its episode id) for a conversation's every copy and
for every feedback event naming it, known or not (an orphan's quarantine row lives with the
conversation it names and re-appears when that arrives).

Links: `event:<event_key>` — one event delivered naming different conversations keeps one copy
(`feedback.dedup_events`).
Evidence: the per-dataset range of `quality` (`conversations.quality_ranges`) whose scale every
rated conversation of the dataset shares; linking them instead would make a dataset one component.
A conversation with a numeric quality reads its dataset's row. And, with `[splits] link_raters`,
the split groups of conversations rated by one human rater (`rater_groups`, over the whole
corpus): a conversation reads its own row. Linking by rater instead made one component of most of
the source (a pool of raters rates nearly every conversation), transformed again whenever a
conversation joined it; as evidence, one that joins a group without renaming it leaves the
others' chunks fresh.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.schemas import bronze_table
from pipelines.transforms.dialogue import rater_group_inputs
from pipelines.transforms.dialogue.common import CONVERSATIONS, EVENTS
from pipelines.transforms.dialogue.conversations import (
    ROLE_MAP,
    dedup_conversations,
    people_groups_of,
    quality_ranges,
)
from pipelines.transforms.units import GROUPS_SCHEMA, LINKS_SCHEMA, UNIT, shared_frame

# the stored column each table's rows are read by (transforms/units.py SCAN_KEYS)
SCAN_KEYS = {CONVERSATIONS: "conversation_id", EVENTS: "conversation_id"}


def unit_keys(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    # A null conversation id (an orphan event) still names its dataset: that unit, not null.
    unit = pl.concat_str(pl.lit("dialogue:"), "dataset", pl.lit("/"), "conversation_id")
    fallback = pl.concat_str(pl.lit("dialogue:"), pl.col("dataset").fill_null(""), pl.lit("/"))
    return {
        table: bronze_table(bronze, table).with_columns(pl.coalesce(unit, fallback).alias(UNIT))
        for table in (CONVERSATIONS, EVENTS)
    }


KEPT = "_kept_conversations"  # one kept copy of each conversation (`unit_shared`)


def _kept(bronze: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    return shared_frame(bronze, KEPT, lambda: unit_shared(bronze, None)[KEPT])


def unit_shared(
    bronze: dict[str, pl.LazyFrame], settings: Settings | None
) -> dict[str, pl.LazyFrame]:
    """Each conversation's kept copy, which the evidence, the groups and the prompts read: the
    corpus's conversations deduplicated once per plan, not once for each."""
    return {KEPT: dedup_conversations(bronze_table(bronze, CONVERSATIONS))[0]}


def unit_links(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    events = unit_keys(bronze, settings)[EVENTS]
    copies = events.select(UNIT, link=pl.lit("event:") + pl.col("event_key"))
    spanning = copies.filter(pl.col(UNIT).n_unique().over("link") > 1)
    return spanning.drop_nulls().unique().select(unit=UNIT, link="link").cast(dict(LINKS_SCHEMA))


def unit_evidence(bronze: dict[str, pl.LazyFrame], settings: Settings) -> dict[str, pl.LazyFrame]:
    kept = _kept(bronze)
    ranges = quality_ranges(kept)
    if not settings.splits.link_raters:
        return {"quality_ranges": ranges}
    # one pass: the corpus's conversations are deduplicated once for the ranges and the groups
    units, pairs, found = pl.collect_all([*rater_group_inputs(kept, bronze, settings), ranges])
    return {"quality_ranges": found.lazy(), "people_groups": people_groups_of(units, pairs).lazy()}


def unit_evidence_reads(
    bronze: dict[str, pl.LazyFrame], settings: Settings
) -> dict[str, pl.LazyFrame]:
    conversations = unit_keys(bronze, settings)[CONVERSATIONS]
    rated = conversations.filter(pl.col("quality").is_not_null())
    reads = {"quality_ranges": rated.select(UNIT, "dataset").unique()}
    if settings.splits.link_raters:
        reads["people_groups"] = conversations.select(UNIT, episode_id=UNIT).unique()
    return reads


def unit_groups(
    bronze: dict[str, pl.LazyFrame], settings: Settings, evidence: dict[str, pl.LazyFrame]
) -> pl.LazyFrame:
    """unit, group_id: each kept conversation's split group (`episodes.group_id`): with
    `link_raters`, its rater group (the evidence's `people_groups`, which holds every kept
    conversation), else itself (user turns carry no actor here, so nothing else links
    conversations); a unit of events naming no conversation has none."""
    if settings.splits.link_raters:
        groups = evidence["people_groups"]
        return groups.select(unit="episode_id", group_id="people_group", episodes=pl.lit(1)).cast(
            dict(GROUPS_SCHEMA)
        )
    kept = _kept(bronze)
    units = kept.select(unit=pl.col("episode_id")).unique()
    return units.select("unit", group_id="unit", episodes=pl.lit(1)).cast(dict(GROUPS_SCHEMA))


def unit_prompts(bronze: dict[str, pl.LazyFrame], settings: Settings) -> pl.LazyFrame:
    """unit, text: each kept conversation's first user turn (roles as the transform maps them),
    the prompt its episode starts from (splits/near_dups.py)."""
    kept = _kept(bronze)
    role = pl.element().struct.field("role").str.strip_chars().str.to_lowercase()
    users = [name for name, canonical in ROLE_MAP.items() if canonical == "user"]
    first = pl.col("turns").list.eval(
        pl.element().filter(role.is_in(users)).struct.field("content")
    )
    return kept.select(unit=pl.col("episode_id"), text=first.list.first())
