"""Provenance of rewards: every reward row has a known rule, a range-valid value and ≥1 existing
feedback row behind it. Returns counts of violations (empty dict = all good)."""

from __future__ import annotations

import polars as pl

from pipelines.gold.rules import RULES


def reward_problems(turn_rewards: pl.DataFrame, feedback: pl.DataFrame) -> dict[str, int]:
    ids = turn_rewards.select("reward_id", fid=pl.col("feedback_ids")).explode("fid")
    missing = ids.filter(pl.col("fid").is_not_null()).join(
        feedback.select(fid="feedback_id"), on="fid", how="anti"
    )
    problems = {
        "reward_outside_minus1_1": turn_rewards.filter(
            pl.col("reward").is_null()
            | pl.col("reward").is_nan()
            | ~pl.col("reward").is_between(-1.0, 1.0)
        ).height,
        "reward_without_feedback": turn_rewards.filter(
            pl.col("feedback_ids").is_null() | (pl.col("feedback_ids").list.len() == 0)
        ).height,
        "feedback_id_not_in_feedback": missing["reward_id"].n_unique(),
        "reward_without_known_rule": turn_rewards.filter(
            pl.col("reward_rule").is_null() | ~pl.col("reward_rule").is_in(list(RULES))
        ).height,
    }
    return {name: n for name, n in problems.items() if n}
