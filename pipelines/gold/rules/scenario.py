"""Scenario (moderator ↔ user) rules: per moderator turn from outcome signals, per scenario from
its metadata line.

Silver attaches each entry's outcome signals to the moderator turn they judge (the entry's own
moderator message, else the latest earlier one) and records the user's decision against the
moderator's proposal as a decision with `suggestion_followed` (compared by meaning, null when the
wording is unknown). Following is a decision signal (DESIGN §3): it moves the reward only with a
`followed_proposal` weight (default 0).

Version 2 counts `validated_output` (the user's own validation in the reply signals) like
`user_validated`, but only for an entry whose outcome has no `user_validated`: the seed writes both
for one judgement, which must not count twice. Signals not in `weights` (checkpoint_timing,
question_quality, user_engagement_level, feedback_specificity, iteration_triggered, ...) stay in
`feedback` without moving the reward.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import json_object, mapped, sorted_ids, to_signed
from pipelines.gold.registry import Silver, rule

FOLLOWED = "followed_proposal"


def _component(params: dict[str, Any]) -> pl.Expr:
    """Each outcome signal mapped to [-1, 1]; unknown labels give null (and are not counted)."""
    label = pl.col("value_text").str.to_lowercase().str.strip_chars()
    return (
        pl.when(pl.col("name").is_in(["user_validated", "validated_output", "scenario_successful"]))
        .then(to_signed(pl.col("value_num")))
        .when(pl.col("name").is_in(["user_satisfaction_score", "user_satisfaction_overall"]))
        .then(to_signed(pl.col("value_num")))
        .when(pl.col("name") == "correction_magnitude")
        .then(mapped(label, params.get("correction_magnitude", {})))
        .when(pl.col("name") == "moderator_effectiveness")
        .then(mapped(label, params.get("moderator_effectiveness", {})))
    )


def _weighted(silver: Silver, params: dict[str, Any], target: str) -> pl.DataFrame:
    weights = {k: float(v) for k, v in params["weights"].items() if k != FOLLOWED}
    rows = (
        silver["feedback"]
        .filter(
            pl.col("episode_id").str.starts_with("scenario:")
            & (pl.col("target") == target)
            & pl.col("name").is_in(list(weights))
        )
        .filter(~_validated_twice())
        .with_columns(
            component=_component(params),
            weight=mapped(pl.col("name"), weights),
        )
        .filter(pl.col("component").is_not_null() & (pl.col("weight") > 0))
    )
    key = "turn_id" if target == "turn" else "episode_id"
    return rows.group_by(key).agg(
        pl.col("episode_id").first() if key != "episode_id" else pl.col("turn_id").first(),
        num=(pl.col("component") * pl.col("weight")).sum(),
        den=pl.col("weight").sum(),
        feedback_ids=sorted_ids(),
        n_signals=pl.len().cast(pl.Int64),
        signals=pl.struct("name", "value_num", "value_text", "component", "weight").sort_by(
            "name", "feedback_id"
        ),
    )


def _validated_twice() -> pl.Expr:
    """A validated_output row of an entry (file + locator) that also has a user_validated row."""
    # only these two signals' entries matter (the others' are null, a group of no
    # user_validated row): their attributes alone are parsed
    both = pl.col("name").is_in(["user_validated", "validated_output"])
    attribute = pl.when(both).then(pl.col("attributes")).str.json_path_match
    entry = [pl.col("episode_id"), attribute("$.file"), attribute("$.locator")]
    has_user_validated = (pl.col("name") == "user_validated").any().over(entry)
    return (pl.col("name") == "validated_output") & has_user_validated


def _followed(decisions: pl.DataFrame) -> pl.DataFrame:
    """Per moderator turn: did the user follow the moderator's proposal (false if any decision
    overrode it)."""
    return (
        decisions.filter(
            pl.col("episode_id").str.starts_with("scenario:")
            & pl.col("suggestion_followed").is_not_null()
        )
        .with_columns(turn_id=pl.col("attributes").str.json_path_match("$.moderator_turn_id"))
        .group_by("turn_id")
        .agg(suggestion_followed=pl.col("suggestion_followed").all())
    )


@rule(
    "scenario_outcome",
    2,
    "moderator turn: weighted mean of user_validated (else validated_output), satisfaction, "
    "correction, effectiveness",
)
def scenario_outcome(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    follow_weight = float(params["weights"].get(FOLLOWED, 0.0))
    followed = pl.col("suggestion_followed").cast(pl.Float64) * 2.0 - 1.0
    use_followed = pl.col("suggestion_followed").is_not_null() & (follow_weight > 0)
    rows = _weighted(silver, params, "turn").join(
        _followed(silver["decisions"]), on="turn_id", how="left"
    )
    rows = rows.with_columns(
        num=pl.col("num") + pl.when(use_followed).then(follow_weight * followed).otherwise(0.0),
        den=pl.col("den") + pl.when(use_followed).then(follow_weight).otherwise(0.0),
    )
    return rows.select(
        "episode_id",
        target=pl.lit("turn"),
        target_id="turn_id",
        turn_id="turn_id",
        reward=pl.col("num") / pl.col("den"),
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.lit("weighted_mean"),
        rule_inputs=json_object(
            signals=pl.col("signals"),
            suggestion_followed=pl.col("suggestion_followed"),
            followed_weight=pl.lit(follow_weight),
        ),
        suggestion_followed="suggestion_followed",
    )


@rule(
    "scenario_episode",
    1,
    "scenario: weighted mean of scenario_successful and user_satisfaction_overall",
)
def scenario_episode(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    rows = _weighted(silver, params, "episode")
    return rows.select(
        "episode_id",
        target=pl.lit("episode"),
        target_id="episode_id",
        reward=pl.col("num") / pl.col("den"),
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.lit("weighted_mean"),
        rule_inputs=json_object(signals=pl.col("signals")),
    )
