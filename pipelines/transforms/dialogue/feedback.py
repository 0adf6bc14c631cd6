"""Feedback events → feedback rows (rating, reward, comment), or silver quarantine."""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings
from pipelines.transforms.dialogue.common import (
    SOURCE,
    conflicts_quarantine,
    json_object,
    mark_latest,
    silver_quarantine,
)

RATING_LOW, RATING_HIGH = -1.0, 1.0  # thumbs: +1 / 0 / -1
REWARD_LOW, REWARD_HIGH = -1.0, 1.0

_EVENT_FIELDS = (
    "event_id",
    "conversation_id",
    "turn_index",
    "rating",
    "rating_raw",
    "reward",
    "comment",
)


def dedup_events(bronze: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """One event per `event_key` (event id, else content): a re-delivery is stored once; an id
    re-used with different content keeps the latest copy and quarantines the others."""
    marked = mark_latest(bronze, ["event_key"])
    what = pl.format("feedback event {}", pl.coalesce("event_id", pl.lit("(no id)")))
    conflicts = conflicts_quarantine(marked, what, _raw())
    return marked.filter(pl.col("is_latest")), conflicts


def resolve(events: pl.LazyFrame, conversations: pl.LazyFrame, settings: Settings) -> pl.LazyFrame:
    """Attach the episode, the turn index base, the 0-based index and a rejection reason (or
    null)."""
    targets = conversations.select(
        "dataset",
        "conversation_id",
        "episode_id",
        n_turns=pl.col("turns").list.len().cast(pl.Int64),
    )
    bases = settings.dialogue_turn_index_base
    base = pl.col("dataset").replace_strict(
        list(bases),
        list(bases.values()),
        default=0,  # a dataset not listed counts turns from 0
        return_dtype=pl.Int64,
    )
    resolved = events.join(targets, on=["dataset", "conversation_id"], how="left").with_columns(
        base=base, index0=pl.col("turn_index") - base
    )
    return resolved.with_columns(error_kind=_error_kind(), message=_message())


def feedback_rows(resolved: pl.LazyFrame) -> pl.LazyFrame:
    good = resolved.filter(pl.col("error_kind").is_null()).with_columns(
        turn_id=pl.format("{}#{}", pl.col("episode_id"), pl.col("index0")),
        target=pl.when(pl.col("turn_index").is_null())
        .then(pl.lit("episode"))
        .otherwise(pl.lit("turn")),
        attributes=json_object(
            {
                "dataset": pl.col("dataset"),
                "conversation_id": pl.col("conversation_id"),
                "event_id": pl.col("event_id"),
                "turn_index_raw": pl.col("turn_index"),
                "turn_index_base": pl.col("base"),
                "file": pl.col("file"),
                "locator": pl.col("locator"),
            },
            {"extra": "extra"},
        ),
    )
    signals = [
        ("rating", pl.col("rating"), None, "[-1,1]"),
        ("reward", pl.col("reward"), None, "[-1,1]"),
        ("comment", None, pl.col("comment"), "text"),
    ]
    return pl.concat([_signal(good, *signal) for signal in signals], how="vertical")


def rater_links(resolved: pl.LazyFrame) -> pl.LazyFrame:
    """unit (episode id), person: the rater of each accepted event that gives a feedback row, as
    `privacy.subjects.feedback_rater` reads it from that row's attributes (`extra` is embedded in
    them as is, and no other attribute is `user_id`)."""
    gives_a_row = pl.any_horizontal(
        pl.col(c).is_not_null() for c in ("rating", "reward", "comment")
    )
    accepted = resolved.filter(pl.col("error_kind").is_null() & gives_a_row)
    return accepted.select(
        unit="episode_id", person=pl.col("extra").str.json_path_match("$.user_id")
    )


def rejected(resolved: pl.LazyFrame) -> pl.LazyFrame:
    return silver_quarantine(
        resolved.filter(pl.col("error_kind").is_not_null()),
        kind=pl.col("error_kind"),
        message=pl.col("message"),
        raw=_raw(),
    )


def _signal(
    good: pl.LazyFrame, name: str, num: pl.Expr | None, text: pl.Expr | None, scale: str
) -> pl.LazyFrame:
    present = num if num is not None else text
    return good.filter(present.is_not_null()).select(
        feedback_id=pl.concat_str(pl.lit(f"{SOURCE}:"), pl.col("event_key"), pl.lit(f":{name}")),
        episode_id=pl.col("episode_id"),
        turn_id=pl.col("turn_id"),
        target=pl.col("target"),
        name=pl.lit(name),
        value_num=num if num is not None else pl.lit(None, dtype=pl.Float64),
        value_text=text if text is not None else pl.lit(None, dtype=pl.String),
        scale=pl.lit(scale),
        source_kind=pl.lit("human"),
        observed_at=pl.col("observed_at"),
        attributes=pl.col("attributes"),
    )


def _out_of(column: str, low: float, high: float) -> pl.Expr:
    return pl.col(column).is_not_null() & ~pl.col(column).is_between(low, high)


def _bad_index() -> pl.Expr:
    return pl.col("turn_index").is_not_null() & (
        (pl.col("index0") < 0) | (pl.col("index0") >= pl.col("n_turns"))
    )


def _error_kind() -> pl.Expr:
    bad_value = (
        pl.col("rating_raw").is_not_null()
        | _out_of("rating", RATING_LOW, RATING_HIGH)
        | _out_of("reward", REWARD_LOW, REWARD_HIGH)
        | _bad_index()
    )
    return (
        pl.when(pl.col("episode_id").is_null())
        .then(pl.lit("orphan"))
        .when(bad_value)
        .then(pl.lit("bad_value"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )


def _message() -> pl.Expr:
    return (
        pl.when(pl.col("episode_id").is_null())
        .then(
            pl.format(
                "conversation {} is unknown in dataset {}",
                pl.col("conversation_id"),
                pl.col("dataset"),
            )
        )
        .when(pl.col("rating_raw").is_not_null())
        .then(pl.format("rating {} is not a number", pl.col("rating_raw")))
        .when(_out_of("rating", RATING_LOW, RATING_HIGH))
        .then(pl.format("rating {} is outside [-1, 1] (thumbs +1/0/-1)", pl.col("rating")))
        .when(_out_of("reward", REWARD_LOW, REWARD_HIGH))
        .then(pl.format("reward {} is outside [-1, 1]", pl.col("reward")))
        .when(_bad_index())
        .then(
            pl.format(
                "turn_index {} (dataset {} counts from {}) is outside the conversation's {} turns",
                pl.col("turn_index"),
                pl.col("dataset"),
                pl.col("base"),
                pl.col("n_turns"),
            )
        )
        .otherwise(pl.lit(None, dtype=pl.String))
    )


def _raw() -> pl.Expr:
    return pl.struct(*_EVENT_FIELDS).struct.json_encode()
