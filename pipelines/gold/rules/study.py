"""Study (wildfire persuasion) rules: a terminal reward per session and per-step stance rewards.

Silver derives each session's end reason from the judge trail (AGREE with confidence ≥ 0.70 →
agreement, two REFUSE in a row → refusal, the 15th resident message → max_turns, else unknown)
and ties the judge stance of IQL step k to the resident message that step answers.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import json_object, mapped, sorted_ids
from pipelines.gold.registry import Silver, rule


def _judge_rows(silver: Silver) -> pl.DataFrame:
    return silver["feedback"].filter(
        pl.col("episode_id").str.starts_with("study:") & (pl.col("name") == "judge_stance")
    ).with_columns(step=pl.col("attributes").str.json_path_match("$.step").cast(pl.Int64, strict=False))


@rule("study_terminal", 1, "end reason agreement +1, refusal -1, max_turns 0, unknown → no reward")
def study_terminal(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    rewards = params["end_reason_rewards"]
    # The end reason is derived from the whole judge trail, so the trail is the provenance.
    trail = _judge_rows(silver).group_by("episode_id").agg(
        feedback_ids=sorted_ids(), n_signals=pl.len().cast(pl.Int64)
    )
    episodes = silver["episodes"].filter((pl.col("source") == "study") & pl.col("end_reason").is_in(list(rewards)))
    return episodes.join(trail, on="episode_id", how="inner").select(
        "episode_id",
        target=pl.lit("episode"),
        target_id="episode_id",
        reward=mapped(pl.col("end_reason"), rewards),
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.lit("end_reason"),
        rule_inputs=json_object(end_reason=pl.col("end_reason"), judged_steps=pl.col("n_signals")),
    )


_other = pl.col("option") != pl.col("selected")


def q_columns(decisions: pl.DataFrame) -> pl.DataFrame:
    """Per decision: Q of the selected action, the best other action, its Q, and the margin."""
    return (
        decisions.select("decision_id", selected="action", candidates="candidates")
        .explode("candidates")
        .with_columns(option=pl.col("candidates").struct.field("action"), q=pl.col("candidates").struct.field("value"))
        .group_by("decision_id")
        .agg(
            selected_policy=pl.col("selected").first(),
            q_selected=pl.col("q").filter(pl.col("option") == pl.col("selected")).first(),
            best_alternative=pl.col("option").filter(_other).sort_by(pl.col("q").filter(_other), descending=True).first(),
            q_best_alternative=pl.col("q").filter(_other).max(),
        )
        .with_columns(q_margin=pl.col("q_selected") - pl.col("q_best_alternative"))
    )


@rule("study_stance_step", 1, "step k: scale × (stance value at step k+1 − at step k), clipped to [-1, 1]")
def study_stance_step(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    # The stance judged at step k is the resident's state BEFORE step k's reply; the effect of
    # step k's policy shows in the stance judged at step k+1.
    values = params["stance_values"]
    judged = _judge_rows(silver).with_columns(value=mapped(pl.col("value_text").str.to_uppercase(), values)).sort("episode_id", "step")
    steps = judged.with_columns(
        next_step=pl.col("step").shift(-1).over("episode_id"),
        next_value=pl.col("value").shift(-1).over("episode_id"),
        next_stance=pl.col("value_text").shift(-1).over("episode_id"),
        next_id=pl.col("feedback_id").shift(-1).over("episode_id"),
    ).filter((pl.col("next_step") == pl.col("step") + 1) & pl.col("value").is_not_null() & pl.col("next_value").is_not_null())
    scale = float(params.get("scale", 0.5))
    decisions = silver["decisions"].select("decision_id", decision_turn="turn_id")
    rows = steps.join(decisions, on="decision_id", how="inner").join(q_columns(silver["decisions"]), on="decision_id", how="left")
    return rows.select(
        "episode_id",
        target=pl.lit("decision"),
        target_id="decision_id",
        turn_id="decision_turn",
        decision_id="decision_id",
        reward=(scale * (pl.col("next_value") - pl.col("value"))).clip(-1.0, 1.0),
        feedback_ids=pl.concat_list("feedback_id", "next_id").list.sort(),
        n_signals=pl.lit(2, pl.Int64),
        aggregation=pl.lit("transition"),
        rule_inputs=json_object(step=pl.col("step"), stance_before=pl.col("value_text"), stance_after=pl.col("next_stance"),
                                value_before=pl.col("value"), value_after=pl.col("next_value"), scale=pl.lit(scale)),
        selected_policy="selected_policy", q_selected="q_selected", best_alternative="best_alternative",
        q_best_alternative="q_best_alternative", q_margin="q_margin",
    )
