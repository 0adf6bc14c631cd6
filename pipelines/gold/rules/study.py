"""Study (wildfire persuasion) rules: a terminal reward per session and per-step stance rewards.

Silver derives each session's end reason from the judge trail (AGREE with confidence ≥ 0.70 →
agreement, two REFUSE in a row → refusal, the 15th resident message → max_turns, else unknown),
records the step whose judged resident message ended it (`end_step` in the episode attributes),
and ties the judge stance of IQL step k to the k-th resident message, which answers the reply
step k−1 chose. Credit goes to the action that caused a stance (DESIGN §3): the stance judged at
step k, and a terminal ±1 it triggers, reward step k−1, never the reply written after it.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import json_object, mapped, sorted_ids
from pipelines.gold.registry import Silver, rule


def _judge_rows(silver: Silver) -> pl.DataFrame:
    return (
        silver["feedback"]
        .filter(pl.col("episode_id").str.starts_with("study:") & (pl.col("name") == "judge_stance"))
        .with_columns(
            step=pl.col("attributes").str.json_path_match("$.step").cast(pl.Int64, strict=False)
        )
    )


def _study_episodes(silver: Silver) -> pl.DataFrame:
    return (
        silver["episodes"]
        .filter(pl.col("source") == "study")
        .select(
            "episode_id",
            "end_reason",
            end_step=pl.col("attributes")
            .str.json_path_match("$.end_step")
            .cast(pl.Int64, strict=False),
        )
    )


def _decision_steps(silver: Silver) -> pl.DataFrame:
    return (
        silver["decisions"]
        .filter(pl.col("episode_id").str.starts_with("study:"))
        .select(
            "episode_id",
            "decision_id",
            "turn_id",
            step=pl.col("attributes").str.json_path_match("$.step").cast(pl.Int64, strict=False),
        )
    )


@rule(
    "study_terminal",
    2,
    "end reason agreement +1, refusal -1, max_turns 0 (unknown: none), credited to step end_step-1",
)
def study_terminal(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    rewards = params["end_reason_rewards"]
    episodes = _study_episodes(silver).filter(pl.col("end_reason").is_in(list(rewards)))
    # The end reason is derived from the judge trail up to the ending, so that trail is the
    # provenance.
    trail = (
        _judge_rows(silver)
        .join(episodes, on="episode_id")
        .filter(pl.col("end_step").is_null() | (pl.col("step") <= pl.col("end_step")))
        .group_by("episode_id")
        .agg(feedback_ids=sorted_ids(), n_signals=pl.len().cast(pl.Int64))
    )
    # The judged message at end_step answers the reply of step end_step − 1: that action caused the
    # ending. Step 0 is the scripted opening, which no IQL decision chose (decision_id stays null).
    credited = _decision_steps(silver).rename({"step": "credited_step"})
    rows = (
        episodes.join(trail, on="episode_id", how="inner")
        .with_columns(credited_step=pl.col("end_step") - 1)
        .join(credited, on=["episode_id", "credited_step"], how="left")
    )
    return rows.select(
        "episode_id",
        target=pl.lit("episode"),
        target_id="episode_id",
        turn_id="turn_id",
        decision_id="decision_id",
        reward=mapped(pl.col("end_reason"), rewards),
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.lit("end_reason"),
        rule_inputs=json_object(
            end_reason=pl.col("end_reason"),
            end_step=pl.col("end_step"),
            credited_step=pl.col("credited_step"),
            judged_steps=pl.col("n_signals"),
        ),
    )


_other = pl.col("option") != pl.col("selected")


def q_columns(decisions: pl.DataFrame) -> pl.DataFrame:
    """Per decision: Q of the selected action, the best other action, its Q, and the margin."""
    return (
        decisions.select("decision_id", selected="action", candidates="candidates")
        .explode("candidates")
        .with_columns(
            option=pl.col("candidates").struct.field("action"),
            q=pl.col("candidates").struct.field("value"),
        )
        .group_by("decision_id")
        .agg(
            selected_policy=pl.col("selected").first(),
            q_selected=pl.col("q").filter(pl.col("option") == pl.col("selected")).first(),
            best_alternative=pl.col("option")
            .filter(_other)
            .sort_by(pl.col("q").filter(_other), descending=True)
            .first(),
            q_best_alternative=pl.col("q").filter(_other).max(),
        )
        .with_columns(q_margin=pl.col("q_selected") - pl.col("q_best_alternative"))
    )


@rule(
    "study_stance_step",
    2,
    "step k: scale × (stance value at step k+1 − at step k), clipped to [-1, 1]; only up to "
    "end_step",
)
def study_stance_step(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    # The stance judged at step k is the resident's state BEFORE step k's reply; the effect of
    # step k's policy shows in the stance judged at step k+1. Stances judged after the one that
    # ended the session describe replies to a conversation whose outcome was already decided.
    values = params["stance_values"]
    ends = _study_episodes(silver).select("episode_id", "end_step")
    judged = (
        _judge_rows(silver)
        .with_columns(value=mapped(pl.col("value_text").str.to_uppercase(), values))
        .sort("episode_id", "step")
    )
    steps = judged.with_columns(
        next_step=pl.col("step").shift(-1).over("episode_id"),
        next_value=pl.col("value").shift(-1).over("episode_id"),
        next_stance=pl.col("value_text").shift(-1).over("episode_id"),
        next_id=pl.col("feedback_id").shift(-1).over("episode_id"),
    ).filter(
        (pl.col("next_step") == pl.col("step") + 1)
        & pl.col("value").is_not_null()
        & pl.col("next_value").is_not_null()
    )
    steps = steps.join(ends, on="episode_id", how="left").filter(
        pl.col("end_step").is_null() | (pl.col("next_step") <= pl.col("end_step"))
    )
    scale = float(params.get("scale", 0.5))
    decisions = silver["decisions"].select("decision_id", decision_turn="turn_id")
    rows = steps.join(decisions, on="decision_id", how="inner").join(
        q_columns(silver["decisions"]), on="decision_id", how="left"
    )
    return rows.select(
        "episode_id",
        target=pl.lit("decision"),
        target_id="decision_id",
        turn_id="decision_turn",
        decision_id="decision_id",
        reward=(scale * (pl.col("next_value") - pl.col("value"))).clip(-1.0, 1.0),
        feedback_ids=pl.concat_list("feedback_id", "next_id").list.eval(pl.element().sort()),
        n_signals=pl.lit(2, pl.Int64),
        aggregation=pl.lit("transition"),
        rule_inputs=json_object(
            step=pl.col("step"),
            stance_before=pl.col("value_text"),
            stance_after=pl.col("next_stance"),
            value_before=pl.col("value"),
            value_after=pl.col("next_value"),
            scale=pl.lit(scale),
        ),
        selected_policy="selected_policy",
        q_selected="q_selected",
        best_alternative="best_alternative",
        q_best_alternative="q_best_alternative",
        q_margin="q_margin",
    )
