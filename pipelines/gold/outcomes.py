"""episode_outcomes: per episode, how it ended, its return, terminal reward and signal counts."""

from __future__ import annotations

import polars as pl

from pipelines.schemas import conform, polars_schema
from pipelines.schemas.gold import EpisodeOutcomes
from pipelines.schemas.silver import FEEDBACK_SOURCE_KINDS


def _reward_totals(turn_rewards: pl.DataFrame) -> pl.DataFrame:
    terminal = pl.col("target") == "episode"
    return (
        turn_rewards.group_by("episode_id")
        .agg(
            n_rewards=pl.len().cast(pl.Int64),
            # The return is every reward of the episode: step rewards plus the terminal one.
            **{"return": pl.col("reward").sum()},
            terminal_reward=pl.col("reward").filter(terminal).mean(),
            terminal_rule=pl.col("reward_rule").filter(terminal).unique().sort().str.join(", "),
        )
        .with_columns(terminal_rule=pl.col("terminal_rule").replace("", None))
    )


def _signal_counts(feedback: pl.DataFrame) -> pl.DataFrame:
    kinds = {
        f"n_{kind}_signals": (pl.col("source_kind") == kind).sum().cast(pl.Int64)
        for kind in FEEDBACK_SOURCE_KINDS
    }
    return feedback.group_by("episode_id").agg(n_signals=pl.len().cast(pl.Int64), **kinds)


def build_episode_outcomes(
    episodes: pl.DataFrame, feedback: pl.DataFrame, turn_rewards: pl.DataFrame
) -> pl.DataFrame:
    counts = [c for c in polars_schema(EpisodeOutcomes) if c.startswith("n_")]
    # Scenario: the metadata line (stored in the episode's attributes at silver) is the outcome
    # record.
    # parsed once, as a column: an expression named twice in an eager frame is computed twice
    outcome = pl.col("outcome")
    table = (
        episodes.select(
            "episode_id",
            "source",
            "end_reason",
            outcome=pl.col("attributes").str.json_path_match("$.metadata"),
        )
        .with_columns(outcome=pl.when(outcome != "null").then(outcome))
        .join(_reward_totals(turn_rewards), on="episode_id", how="left")
        .join(_signal_counts(feedback), on="episode_id", how="left")
        .with_columns(pl.col(counts).fill_null(0))
    )
    return conform(table, polars_schema(EpisodeOutcomes)).collect().sort("episode_id")
