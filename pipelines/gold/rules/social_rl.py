"""social_rl_feedback: one reward per agent and round from the [0,1] feedback vector."""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import json_object, mapped, sorted_ids, to_signed
from pipelines.gold.registry import Silver, rule


@rule(
    "social_rl_feedback",
    1,
    "agent round: 2 × weighted mean(engagement, alignment, contribution) − 1",
)
def social_rl_feedback(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    weights = {k: float(v) for k, v in params["weights"].items() if float(v) > 0}
    rows = (
        silver["feedback"]
        .filter(
            (pl.col("target") == "agent_round")
            & pl.col("name").is_in(list(weights))
            & pl.col("value_num").is_not_null()
        )
        .with_columns(weight=mapped(pl.col("name"), weights))
    )
    grouped = rows.group_by("episode_id", "agent_id").agg(
        num=(pl.col("value_num") * pl.col("weight")).sum(),
        den=pl.col("weight").sum(),
        feedback_ids=sorted_ids(),
        n_signals=pl.len().cast(pl.Int64),
        signals=pl.struct("name", "value_num", "weight").sort_by("name"),
    )
    rounds = (
        silver["agent_rounds"]
        .select("episode_id", "agent_id", "round_number")
        .unique(["episode_id", "agent_id"])
    )
    return grouped.join(rounds, on=["episode_id", "agent_id"], how="left").select(
        "episode_id",
        target=pl.lit("agent_round"),
        target_id=pl.format("{}/{}", "episode_id", "agent_id"),
        agent_id="agent_id",
        round_number="round_number",
        # The vector is on [0,1]; clip guards against float noise like 1.0000000000000002.
        reward=to_signed(pl.col("num") / pl.col("den")).clip(-1.0, 1.0),
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.lit("weighted_mean"),
        rule_inputs=json_object(signals=pl.col("signals")),
    )
