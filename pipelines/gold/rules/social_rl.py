"""Social RL rules.

- social_rl_feedback: one reward per agent and round from the [0,1] feedback vector.
- social_rl_adaptation_effect: one reward per coach step (agent × round r, whatever the coach did
  to the agent's policy, `none` included): how that agent's feedback changed from round r to r+1.
"""

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


def _run_rounds(episodes: pl.DataFrame) -> pl.DataFrame:
    attribute = pl.col("attributes").str.json_path_match
    return episodes.filter(pl.col("source") == "social_rl").select(
        "episode_id",
        run=attribute("$.run_dir"),
        round_number=attribute("$.round_number").cast(pl.Int64, strict=False),
    )


def _single_adaptation(decisions: pl.DataFrame) -> pl.DataFrame:
    """Per coach step: its adaptation decisions; `decision_id` only when there is exactly one."""
    coach = decisions.filter(pl.col("actor_type") == "coach")
    return coach.group_by("episode_id", pl.col("actor_id").alias("agent_id")).agg(
        decision_ids=pl.col("decision_id").sort(),
        decision_id=pl.when(pl.len() == 1).then(pl.col("decision_id").first()),
    )


@rule(
    "social_rl_adaptation_effect",
    1,
    "coach step (agent, round r): Σwᵢ(xᵢ(r+1) − xᵢ(r))/Σwᵢ, clipped to [-1, 1]",
)
def social_rl_adaptation_effect(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    weights = {k: float(v) for k, v in params["weights"].items() if float(v) > 0}
    signals = (
        silver["feedback"]
        .filter(
            (pl.col("target") == "agent_round")
            & pl.col("name").is_in(list(weights))
            & pl.col("value_num").is_not_null()
        )
        .join(_run_rounds(silver["episodes"]), on="episode_id")
        .select("episode_id", "run", "round_number", "agent_id", "name", "value_num", "feedback_id")
    )
    # The adaptation of round r shapes round r+1: only the very next round measures it.
    after = signals.select(
        "run",
        "agent_id",
        "name",
        round_number=pl.col("round_number") - 1,
        after="value_num",
        after_id="feedback_id",
        next_episode_id="episode_id",
    )
    pairs = signals.join(after, on=["run", "agent_id", "name", "round_number"]).with_columns(
        weight=mapped(pl.col("name"), weights), change=pl.col("after") - pl.col("value_num")
    )
    grouped = pairs.group_by("episode_id", "agent_id", "round_number").agg(
        num=(pl.col("change") * pl.col("weight")).sum(),
        den=pl.col("weight").sum(),
        feedback_ids=pl.concat_list("feedback_id", "after_id").explode().unique().sort(),
        n_signals=pl.len().cast(pl.Int64),
        next_episode_id=pl.col("next_episode_id").first(),
        signals=pl.struct("name", before="value_num", after="after", weight="weight").sort_by(
            "name"
        ),
    )
    steps = grouped.join(
        _single_adaptation(silver["decisions"]), on=["episode_id", "agent_id"], how="left"
    )
    return steps.select(
        "episode_id",
        target=pl.lit("coach_step"),
        target_id=pl.format("{}/{}", "episode_id", "agent_id"),
        decision_id="decision_id",
        agent_id="agent_id",
        round_number="round_number",
        # Rounded: 0.35 − 0.7 is −0.35 reported, not −0.34999999999999997.
        reward=(pl.col("num") / pl.col("den")).round(9).clip(-1.0, 1.0),
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.lit("weighted_mean"),
        rule_inputs=json_object(
            signals=pl.col("signals"),
            next_episode_id=pl.col("next_episode_id"),
            decision_ids=pl.col("decision_ids"),
        ),
    )
