"""Feedback vectors → agent_rounds (one row per agent × round) and their feedback signals."""

from __future__ import annotations

import polars as pl

from pipelines.transforms.social_rl.common import (
    DECIMALS,
    SCORES,
    adaptations,
    json_object,
    role_prefix,
)
from pipelines.transforms.stable_ids import (
    json_literal,
    json_number,
    json_string,
    stable_hash_expr,
)

REPORTED = ("engagement", "alignment", "contribution")


def agent_rounds(rounds: pl.LazyFrame, roles: pl.LazyFrame) -> pl.LazyFrame:
    """Agent rounds with `ended_at` (the round's last message time, for the feedback rows)."""
    ended = rounds.select(
        "episode_id",
        ended_at=pl.col("messages").list.eval(pl.element().struct.field("ts")).list.max(),
    )
    deltas = (
        adaptations(rounds)
        .filter(pl.col("agent_id").is_not_null())
        .group_by("episode_id", "agent_id", maintain_order=True)
        .agg(
            pl.col("role").drop_nulls().first(),
            *(
                pl.col(f"{d}_delta").drop_nulls().first().alias(f"reported_{d}_delta")
                for d in REPORTED
            ),
            adaptations=pl.struct(
                pl.all().exclude("episode_id", "run_dir", "agent_id", "adaptation_index")
            ),
        )
    )
    episode_keys = rounds.select("episode_id", "run_dir", "round_number")
    joined = (
        _vector_columns(rounds)
        .join(deltas, on=["episode_id", "agent_id"], how="full", coalesce=True)
        .join(episode_keys, on="episode_id", how="left")
        .join(roles, on=["run_dir", "agent_id"], how="left")
        .join(ended, on="episode_id", how="left")
    )
    decimals = (*SCORES, "synthesis_inclusion", *(f"reported_{d}_delta" for d in REPORTED))
    return joined.select(
        "episode_id",
        "agent_id",
        "round_number",
        pl.coalesce(role_prefix(pl.col("agent_id")), "role", "adapted_role").alias("role"),
        *(pl.col(c).round(DECIMALS) for c in decimals),
        "direct_references",
        "response_received",
        "analyst_mentions",
        "concepts_embodied",
        "ended_at",
        attributes=json_object(
            vector_round_number=pl.col("vector_round_number"),
            extra=pl.col("vector_extra"),
            adaptations=pl.col("adaptations"),
        ),
    )


def _vector_columns(rounds: pl.LazyFrame) -> pl.LazyFrame:
    return (
        rounds.filter(pl.col("feedback").list.len() > 0)
        .select("episode_id", "feedback")
        .explode("feedback")
        .unnest("feedback")
        .rename({"round_number": "vector_round_number", "extra": "vector_extra"})
    )


def feedback(agent_rounds: pl.LazyFrame) -> pl.LazyFrame:
    """Three `system` signals per agent round (the [0,1] scores that are present)."""
    signals = (
        agent_rounds.select("episode_id", "agent_id", "round_number", "ended_at", *SCORES)
        .unpivot(
            index=["episode_id", "agent_id", "round_number", "ended_at"],
            on=list(SCORES),
            variable_name="name",
            value_name="value_num",
        )
        .filter(pl.col("value_num").is_not_null())
    )
    feedback_id = stable_hash_expr(
        json_string("episode_id"),
        json_literal("agent_round"),
        json_string("agent_id"),
        json_string("name"),
        json_number("value_num"),
    )
    return signals.select(
        feedback_id=feedback_id,
        episode_id="episode_id",
        agent_id="agent_id",
        target=pl.lit("agent_round"),
        name="name",
        value_num="value_num",
        scale=pl.lit("[0,1]"),
        source_kind=pl.lit("system"),
        observed_at="ended_at",
        attributes=json_object(round_number=pl.col("round_number")),
    )
