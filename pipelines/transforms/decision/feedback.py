"""Feedback signals of decisions: the outcome (rating, wasGoodDecision), a human's override of a
companion suggestion, and seed 004's later signals (followUp, longTermOutcome), one `feedback`
row each."""

from __future__ import annotations

import polars as pl

from pipelines.transforms.stable_ids import json_number, json_string, stable_hash_expr

_RATED_BY_KIND = {
    "user": "human",
    "community": "human",
    "human": "human",
    "self": "self",
    "system": "system",
}
_FOLLOW_UPS = ("follow_up_conversation_continued", "follow_up_mistake_corrected")


def _rated_by_kind() -> pl.Expr:
    return (
        pl.col("outcome_rated_by")
        .str.to_lowercase()
        .replace_strict(_RATED_BY_KIND, default="outcome", return_dtype=pl.String)
    )


def _signal(
    frame: pl.DataFrame,
    name: str,
    value_num: pl.Expr,
    value_text: pl.Expr,
    scale: pl.Expr,
    source_kind: pl.Expr,
    observed_at: pl.Expr,
    attributes: pl.Expr,
) -> pl.DataFrame:
    return frame.select(
        "episode_id",
        "decision_id",
        target=pl.lit("decision"),
        name=pl.lit(name),
        value_num=value_num.cast(pl.Float64),
        value_text=value_text.cast(pl.String),
        scale=scale,
        source_kind=source_kind,
        observed_at=observed_at,
        attributes=attributes.struct.json_encode(),
    )


def _rating_signal(decisions: pl.DataFrame) -> pl.DataFrame:
    rated = decisions.filter(pl.col("outcome_rating").is_not_null())
    why = pl.struct(
        "scale_evidence",
        "dataset",
        "rater",
        reading="rating_reading",
        was_good_decision="outcome_was_good",
        rated_by="outcome_rated_by",
        outcome="outcome",
    )
    return _signal(
        rated,
        "rating",
        pl.col("outcome_rating"),
        pl.lit(None),
        pl.col("rating_scale"),
        _rated_by_kind(),
        pl.col("outcome_rated_at"),
        why,
    )


def _follow_up_signals(decisions: pl.DataFrame) -> list[pl.DataFrame]:
    """seed 004 `outcome.followUp`: later facts about the outcome, kept as signals (no rule
    rewards them)."""
    context = pl.struct(rated_by="outcome_rated_by", follow_up="follow_up")
    frames = []
    for column in _FOLLOW_UPS:
        rows = decisions.filter(pl.col(column).is_not_null())
        frames.append(
            _signal(
                rows,
                column,
                pl.col(column),
                pl.col(column).cast(pl.String),
                pl.lit("bool"),
                _rated_by_kind(),
                pl.col("outcome_rated_at"),
                context,
            )
        )
    satisfied = decisions.filter(pl.col("follow_up_user_satisfaction").is_not_null())
    frames.append(
        _signal(
            satisfied,
            "follow_up_user_satisfaction",
            pl.col("follow_up_user_satisfaction"),
            pl.lit(None),
            pl.lit("as_recorded"),
            _rated_by_kind(),
            pl.col("outcome_rated_at"),
            context,
        )
    )
    return frames


def _long_term_signal(decisions: pl.DataFrame) -> pl.DataFrame:
    """seed 004 `longTermOutcome`: its final category, with the whole record (checkpoints) as
    attributes."""
    rows = decisions.filter(pl.col("long_term_outcome").is_not_null())
    return rows.select(
        "episode_id",
        "decision_id",
        target=pl.lit("decision"),
        name=pl.lit("long_term_outcome"),
        value_num=pl.lit(None, pl.Float64),
        value_text=pl.col("long_term_outcome_final"),
        scale=pl.lit("category"),
        source_kind=pl.lit("outcome"),
        observed_at=pl.lit(None, pl.Datetime("us", "UTC")),
        attributes=pl.col("long_term_outcome"),
    )


def feedback_signals(decisions: pl.DataFrame) -> pl.DataFrame:
    """One feedback row per signal of each kept decision (ids stable across runs)."""
    judged = decisions.filter(pl.col("outcome_was_good").is_not_null())
    overridden = decisions.filter(
        (pl.col("actor_kind") == "human") & pl.col("suggestion_followed").not_()
    )
    signals = pl.concat(
        [
            _rating_signal(decisions),
            _signal(
                judged,
                "was_good_decision",
                pl.col("outcome_was_good"),
                pl.col("outcome_was_good").cast(pl.String),
                pl.lit("bool"),
                _rated_by_kind(),
                pl.col("outcome_rated_at"),
                pl.struct(rated_by="outcome_rated_by", outcome="outcome"),
            ),
            _signal(
                overridden,
                "suggestion_overridden",
                pl.lit(1.0),
                pl.lit("true"),
                pl.lit("bool"),
                pl.lit("human"),
                pl.col("ts"),
                pl.struct(
                    "suggested_action", "action", "companion_suggestion", "suggestion_followed_from"
                ),
            ),
            *_follow_up_signals(decisions),
            _long_term_signal(decisions),
        ]
    )
    feedback_id = stable_hash_expr(
        json_string("target"),
        json_string("decision_id"),
        json_string("name"),
        json_number("value_num"),
        json_string("value_text"),
    )
    return signals.with_columns(feedback_id=feedback_id, turn_id=pl.lit(None, pl.String))
