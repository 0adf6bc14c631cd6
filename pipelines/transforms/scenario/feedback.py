"""Scenario signals → silver feedback.

- Outcome signals become feedback on the moderator turn they judge: the entry's own moderator
  turn,
  else the latest earlier one (hook-logged user replies), else the episode.
- Signals about the user's reply (`user_engagement_level`, `feedback_specificity`) judge the user
  turn;
  every other entry signal judges the moderator turn (see ENTRY_SIGNALS for names, scales and
  kinds). Facts that are not judgements stay turn attributes (see `turns`).
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.scenario.common import json_object
from pipelines.transforms.stable_ids import (
    json_literal,
    json_number,
    json_string,
    stable_hash_expr,
)

# Entry signals: (name = bronze column, scale, source kind, judged turn). `moderator`: the moderator
# turn the entry judges; `user`: the entry's user turn (signals about the reply itself). Either
# falls back to the episode. A label that is a number ("0.8") also gets value_num (scale [0,1] when
# inside it).
ENTRY_SIGNALS = (
    ("user_validated", "bool", "human", "moderator"),
    ("validated_output", "bool", "human", "moderator"),
    ("user_satisfaction_score", "[0,1]", "human", "moderator"),
    ("expressed_satisfaction", "bool", "human", "moderator"),
    ("correction_magnitude", "category", "system", "moderator"),
    ("moderator_effectiveness", "category", "self", "moderator"),
    ("checkpoint_timing", "category", "self", "moderator"),
    ("question_quality", "category", "self", "moderator"),
    ("checkpoint_successful", "bool", "outcome", "moderator"),
    ("iteration_triggered", "bool", "outcome", "moderator"),
    ("user_engagement_level", "category", "system", "user"),
    ("feedback_specificity", "category", "system", "user"),
)


def _label_number(value: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    number = value.str.strip_chars().cast(pl.Float64, strict=False)
    scale = (
        pl.when(number.is_between(0.0, 1.0))
        .then(pl.lit("[0,1]"))
        .when(number.is_not_null())
        .then(pl.lit("number"))
        .otherwise(pl.lit("category"))
    )
    return number, scale


def entry_feedback(entries: pl.LazyFrame) -> pl.LazyFrame:
    frames = []
    for name, scale, kind, about in ENTRY_SIGNALS:
        value = pl.col(name)
        numeric = scale != "category"
        number, label_scale = _label_number(value)
        judged = pl.col("judged_turn_id") if about == "moderator" else pl.col("user_turn_id")
        frames.append(
            entries.filter(value.is_not_null()).select(
                "episode_id",
                "record_index",
                turn_id=judged,
                name=pl.lit(name),
                value_num=value.cast(pl.Float64) if numeric else number,
                value_text=pl.lit(None, pl.String) if numeric else value,
                scale=pl.lit(scale) if numeric else label_scale,
                source_kind=pl.lit(kind),
                observed_at="ts",
                attributes=json_object(
                    {
                        "interaction_type": pl.col("interaction_type"),
                        "file": pl.col("file"),
                        "locator": pl.col("locator"),
                    }
                ),
            )
        )
    return (
        pl.concat(frames)
        .with_columns(
            target=pl.when(pl.col("turn_id").is_null())
            .then(pl.lit("episode"))
            .otherwise(pl.lit("turn"))
        )
        .with_columns(
            feedback_id=stable_hash_expr(
                json_literal("feedback"),
                json_string("episode_id"),
                json_number("record_index"),
                json_string("turn_id"),
                json_string("name"),
                json_number("value_num"),
                json_string("value_text"),
            )
        )
        .drop("record_index")
    )


METADATA_SIGNALS = (
    ("user_satisfaction_overall", "user_satisfaction_overall", "[0,1]", "human"),
    ("scenario_successful", "scenario_successful", "bool", "outcome"),
)


def metadata_feedback(metadata: pl.LazyFrame) -> pl.LazyFrame:
    frames = [
        metadata.filter(pl.col(column).is_not_null()).select(
            "episode_id",
            turn_id=pl.lit(None, pl.String),
            target=pl.lit("episode"),
            name=pl.lit(name),
            value_num=pl.col(column).cast(pl.Float64),
            scale=pl.lit(scale),
            source_kind=pl.lit(kind),
            observed_at="ts",
            attributes=json_object({"file": pl.col("file"), "locator": pl.col("locator")}),
        )
        for name, column, scale, kind in METADATA_SIGNALS
    ]
    return pl.concat(frames).with_columns(
        feedback_id=stable_hash_expr(
            json_literal("feedback"),
            json_string("episode_id"),
            json_string("name"),
            json_number("value_num"),
        )
    )
