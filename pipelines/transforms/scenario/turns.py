"""Scenario silver turns and episodes.

- Facts that are not judgements stay turn attributes: `new_strategic_context`,
  `provided_correction`,
  `engagement_indicators` on the user turn, `synthesis_length_words` and `checkpoint_number` on
  the moderator turn (judgements become feedback: see `feedback`).
- Response time: the two turns of one entry share one timestamp, so the second turn's gap says
  nothing. A user turn takes `user_decision.decision_time_seconds` where known; otherwise the
  second turn of an entry has no response time (null), which the turn attributes say
  (`response_seconds`, `response_seconds_basis`) and gold's quality_signals honours.
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.scenario.common import SOURCE, episode_id, json_object
from pipelines.transforms.scenario.corrections import source_correction


def response_timing(
    second_in_entry: pl.Expr, recorded: pl.Expr | None = None
) -> dict[str, pl.Expr]:
    """`response_seconds` / `response_seconds_basis` attributes: a recorded figure wins; the
    second turn of an entry shares the first one's timestamp, so without a figure its response
    time is unknown."""
    recorded = pl.lit(None, pl.Float64) if recorded is None else recorded
    basis = (
        pl.when(recorded.is_not_null())
        .then(pl.lit("decision_time_seconds"))
        .when(second_in_entry)
        .then(pl.lit("unknown"))
    )
    return {"response_seconds": recorded, "response_seconds_basis": basis}


def build_turns(entries: pl.LazyFrame) -> pl.LazyFrame:
    context = {
        "interaction_type": pl.col("interaction_type"),
        "phase": pl.col("phase"),
        "round": pl.col("round"),
        "file": pl.col("file"),
        "locator": pl.col("locator"),
    }
    both = pl.col("moderator_turn_id").is_not_null() & pl.col("user_turn_id").is_not_null()
    moderator = entries.filter(pl.col("moderator_turn_id").is_not_null()).select(
        turn_id=pl.col("moderator_turn_id"),
        episode_id="episode_id",
        turn_index=pl.col("moderator_turn_index"),
        role=pl.lit("assistant"),
        native_role=pl.lit("moderator"),
        text=pl.col("moderator_text"),
        ts="ts",
        attributes=json_object(
            {
                **context,
                "message_type": pl.col("moderator_message_type"),
                "checkpoint_number": pl.col("checkpoint_number"),
                "synthesis_length_words": pl.col("synthesis_length_words"),
                "revises_turn_id": pl.col("revises_turn_id"),
                **response_timing(both & pl.col("user_first")),
            },
            {"fields": pl.col("moderator_fields")},
        ),
    )
    correction = source_correction()
    user = entries.filter(pl.col("user_turn_id").is_not_null()).select(
        turn_id=pl.col("user_turn_id"),
        episode_id="episode_id",
        turn_index=pl.col("user_turn_index"),
        role=pl.lit("user"),
        native_role=pl.lit("user"),
        text=pl.col("user_text"),
        ts="ts",
        attributes=json_object(
            {
                **context,
                "response_type": pl.col("user_response_type"),
                "answers_turn_id": pl.col("answered_turn_id"),
                "source_correction": correction,
                "corrects_turn_id": pl.when(correction).then(pl.col("answered_turn_id")),
                "new_strategic_context": pl.col("new_strategic_context"),
                **response_timing(both & ~pl.col("user_first"), pl.col("decision_time_seconds")),
            },
            {
                "engagement_indicators": pl.col("engagement_indicators"),
                "fields": pl.col("user_fields"),
            },
        ),
    )
    return pl.concat([moderator, user]).with_columns(
        actor_id=pl.lit(None, pl.String), internal=pl.lit(False)
    )


def build_episodes(
    chosen: pl.LazyFrame, entries: pl.LazyFrame, metadata: pl.LazyFrame
) -> pl.LazyFrame:
    times = pl.concat([entries.select("scenario_id", "ts"), metadata.select("scenario_id", "ts")])
    span = times.group_by("scenario_id").agg(
        started_at=pl.col("ts").min(), ended_at=pl.col("ts").max()
    )
    claimed = (
        entries.filter(pl.col("entry_scenario_id") != pl.col("scenario_id"))
        .group_by("scenario_id")
        .agg(claimed_ids=pl.col("entry_scenario_id").unique().sort())
    )
    # an entry's turns are its moderator and user turns (build_turns)
    present = pl.col("moderator_turn_id").is_not_null().cast(pl.Int64) + pl.col(
        "user_turn_id"
    ).is_not_null().cast(pl.Int64)
    counts = entries.group_by("episode_id").agg(n_turns=present.sum())
    meta = metadata.select("scenario_id", "scenario_successful", meta_json="metadata")
    successful = pl.col("scenario_successful")
    end_reason = (
        pl.when(successful)
        .then(pl.lit("success"))
        .when(successful.not_())
        .then(pl.lit("failure"))
        .when(pl.col("meta_json").is_not_null())
        .then(pl.lit("completed"))
        .when(pl.col("state") == "active")
        .then(pl.lit("in_progress"))
        .otherwise(pl.col("state"))
    )
    return (
        chosen.join(span, on="scenario_id", how="left")
        .join(claimed, on="scenario_id", how="left")
        .join(meta, on="scenario_id", how="left")
        .with_columns(episode_id=episode_id())
        .join(counts, on="episode_id", how="left")
        .select(
            "episode_id",
            source=pl.lit(SOURCE),
            native_id="scenario_id",
            group_id="scenario_id",
            started_at="started_at",
            ended_at="ended_at",
            n_turns=pl.col("n_turns").fill_null(0),
            end_reason=end_reason,
            source_file="file",
            attributes=json_object(
                {
                    "state": pl.col("state"),
                    "other_copies": pl.col("other_copies"),
                    "claimed_scenario_ids": pl.col("claimed_ids"),
                },
                {"metadata": pl.col("meta_json")},
            ),
        )
    )
