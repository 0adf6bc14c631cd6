"""Conversations → episodes (and their split unit), turns and the episode-level `quality`
feedback."""

from __future__ import annotations

import polars as pl

from pipelines.privacy.subjects import feedback_rater
from pipelines.transforms.dialogue.common import (
    SOURCE,
    conflicts_quarantine,
    episode_id,
    json_object,
    mark_latest,
    native_id,
)
from pipelines.transforms.groups import person_components

KEYS = ["dataset", "conversation_id"]

# Role names seen in chat logs → canonical role. Anything else becomes `agent` (another
# participant that is neither the user nor the assistant); `native_role` keeps the original.
ROLE_MAP: dict[str, str] = {
    **dict.fromkeys(
        ("user", "human", "customer", "client", "participant", "student", "learner"), "user"
    ),
    **dict.fromkeys(("assistant", "bot", "ai", "model", "chatbot", "gpt", "tutor"), "assistant"),
    **dict.fromkeys(("system", "developer", "tool", "function"), "system"),
}


def dedup_conversations(bronze: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """(one kept copy per conversation, duplicate_conflict quarantine of differing older copies)."""
    marked = mark_latest(bronze, KEYS)
    raw = pl.struct(
        "conversation_id", "turns", "tags", "quality", "quality_raw"
    ).struct.json_encode()
    what = pl.format("conversation {} of dataset {}", pl.col("conversation_id"), pl.col("dataset"))
    conflicts = conflicts_quarantine(marked, what, raw)
    kept = marked.filter(pl.col("is_latest")).with_columns(episode_id=episode_id())
    return kept, conflicts


def episodes(kept: pl.LazyFrame) -> pl.LazyFrame:
    turn_ts = pl.col("turns").list.eval(pl.element().struct.field("ts"))
    attributes = json_object(
        {
            "dataset": pl.col("dataset"),
            "conversation_id": pl.col("conversation_id"),
            "tags": pl.col("tags"),
        },
        {"extra": "extra"},
    )
    return kept.select(
        episode_id=pl.col("episode_id"),
        source=pl.lit(SOURCE),
        native_id=native_id(),
        group_id=pl.col("episode_id"),
        started_at=pl.coalesce("created_at", turn_ts.list.min()),
        ended_at=pl.coalesce("updated_at", turn_ts.list.max(), "created_at"),
        n_turns=pl.col("turns").list.len().cast(pl.Int64),
        end_reason=pl.lit(None, dtype=pl.String),
        attributes=attributes,
        source_file=pl.col("file"),
    )


def turns(kept: pl.LazyFrame) -> pl.LazyFrame:
    exploded = (
        kept.filter(pl.col("turns").list.len() > 0)
        .select("episode_id", "turns", turn_index=pl.int_ranges(pl.col("turns").list.len()))
        .explode(["turns", "turn_index"])
        .unnest("turns")
    )
    canonical = pl.col("role").str.strip_chars().str.to_lowercase()
    return exploded.select(
        turn_id=pl.format("{}#{}", pl.col("episode_id"), pl.col("turn_index")),
        episode_id=pl.col("episode_id"),
        turn_index=pl.col("turn_index").cast(pl.Int64),
        role=canonical.replace_strict(ROLE_MAP, default="agent", return_dtype=pl.String),
        native_role=pl.col("role"),
        actor_id=pl.lit(None, dtype=pl.String),
        text=pl.col("content"),
        ts=pl.col("ts"),
        internal=pl.lit(False),
        attributes=pl.col("extra"),
    )


def quality_ranges(kept: pl.LazyFrame) -> pl.LazyFrame:
    """dataset, quality_low, quality_high: the numeric `quality` values seen per dataset, the
    evidence its scale is inferred from. A small table over every conversation of the dataset:
    a partial rebuild is passed the one of the whole corpus, so its scales stay the same."""
    return kept.group_by("dataset").agg(
        quality_low=pl.col("quality").min(), quality_high=pl.col("quality").max()
    )


def quality_feedback(kept: pl.LazyFrame, ranges: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """Conversation `quality` → one episode-level feedback row (numeric, or a text label); the
    numeric scale from `ranges` (`quality_ranges` of these conversations when not given)."""
    ranges = quality_ranges(kept) if ranges is None else ranges
    rated = kept.filter(pl.col("quality").is_not_null() | pl.col("quality_raw").is_not_null())
    rated = rated.join(ranges, on="dataset", how="left", nulls_equal=True, maintain_order="left")
    label = (
        pl.when(pl.col("quality_raw").str.starts_with('"'))
        .then(pl.col("quality_raw").str.json_decode(pl.String))
        .otherwise(pl.col("quality_raw"))
    )
    return rated.select(
        feedback_id=pl.concat_str(pl.col("episode_id"), pl.lit("#quality")),
        episode_id=pl.col("episode_id"),
        target=pl.lit("episode"),
        name=pl.lit("quality"),
        value_num=pl.col("quality"),
        value_text=label,
        scale=pl.when(pl.col("quality").is_null())
        .then(pl.lit("category"))
        .otherwise(_numeric_quality_scale()),
        source_kind=pl.lit("human"),
        observed_at=pl.coalesce("updated_at", "created_at"),
        attributes=json_object({"dataset": pl.col("dataset")}, {}),
    )


def _numeric_quality_scale() -> pl.Expr:
    # The quality scale is not written in the data: infer it per dataset from the values seen.
    low, high = pl.col("quality_low"), pl.col("quality_high")
    return (
        pl.when((low >= 0) & (high <= 1))
        .then(pl.lit("[0,1]"))
        .when((low >= 1) & (high <= 5))
        .then(pl.lit("1-5"))
        .otherwise(pl.lit("raw"))
    )


def conversation_people(
    turns: pl.LazyFrame, feedback: pl.LazyFrame, link_raters: bool
) -> pl.LazyFrame:
    """unit (episode id), person: the humans a conversation's split group keeps on one side, its
    user turns' actors and, with `link_raters`, the human raters of its feedback. A rater is not a
    speaker and nothing of theirs is in the prompt or completion: linking by them only guards
    against rater-specific preference leaking into a test score (`[splits] link_raters`)."""
    users = turns.filter(pl.col("role") == "user").select(unit="episode_id", person="actor_id")
    if not link_raters:
        return users
    raters = feedback.filter(pl.col("source_kind") == "human").select(
        unit="episode_id", person=feedback_rater()
    )
    return pl.concat([users, raters])


def people_groups(episodes: pl.LazyFrame, links: pl.LazyFrame) -> pl.DataFrame:
    """episode_id, people_group: conversations linked by a shared person (`links`: unit, person)
    are one split unit, named after the earliest of them."""
    # together: the kept conversations are computed once
    units, pairs = pl.collect_all(people_group_inputs(episodes, links))
    return people_groups_of(units, pairs)


def people_group_inputs(episodes: pl.LazyFrame, links: pl.LazyFrame) -> list[pl.LazyFrame]:
    """(unit, started_at) of `episodes` and `links` (unit, person): what `people_groups_of`
    reads, to be collected together with whatever else shares their plan."""
    return [episodes.select(unit="episode_id", started_at="started_at"), links]


def people_groups_of(units: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """`people_groups` of its collected inputs (`people_group_inputs`)."""
    return person_components(units, pairs).select(episode_id="unit", people_group="group")


def grouped_by_people(
    episodes: pl.LazyFrame,
    turns: pl.LazyFrame,
    feedback: pl.LazyFrame,
    link_raters: bool = True,
    groups: pl.LazyFrame | pl.DataFrame | None = None,
) -> pl.LazyFrame:
    """group_id: conversations linked by a shared person are one split unit (`people_groups`, or
    `groups` of the whole corpus when these conversations are only part of it); a conversation
    nobody links keeps its own."""
    if groups is None:
        groups = people_groups(episodes, conversation_people(turns, feedback, link_raters))
    components = groups.lazy().select("episode_id", _group="people_group")
    return (
        episodes.join(components, on="episode_id", how="left")
        .with_columns(group_id=pl.coalesce("_group", "group_id"))
        .drop("_group")
    )
