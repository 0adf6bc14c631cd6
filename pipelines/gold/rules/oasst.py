"""oasst_feedback: OpenAssistant emoji counts and `quality` labels on assistant messages.

A `quality` label (OASST's reviewers' mean in [0, 1]) is the direct judgement of a message and
wins: reward = 2q − 1. Without one, the emojis vote: reward = Σ countᵢ·valueᵢ / Σ countᵢ over the
emojis with a value in rewards.toml (`+1` = 1, `-1` = −1, `red_flag` = −1; `_skip_reply` and the
other task-skip markers say nothing about the message and have no value). No label and no valued
emoji → no reward. Sibling ranks are comparisons, not rewards: they make preference pairs.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import json_object, mapped, to_signed
from pipelines.gold.raters import MAJORITY_SHARE
from pipelines.gold.registry import Silver, rule


@rule(
    "oasst_feedback", 1, "quality label 2q-1, else emoji vote Σcount·value/Σcount; assistant turns"
)
def oasst_feedback(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    roles = silver["turns"].select("turn_id", "role")
    rows = (
        silver["feedback"]
        .filter(pl.col("episode_id").str.starts_with("oasst:") & (pl.col("target") == "turn"))
        .join(roles, on="turn_id")
        .filter(pl.col("role").is_in(list(params.get("reward_roles", ["assistant"]))))
    )
    label = rows.filter(
        (pl.col("name") == "label") & (pl.col("value_text") == params["quality_label"])
    )
    emoji = rows.filter(pl.col("name") == "emoji").with_columns(
        value=mapped(pl.col("value_text"), params["emoji_values"])
    )
    emoji = emoji.filter(pl.col("value").is_not_null() & (pl.col("value_num") > 0))
    by_label = label.group_by("turn_id").agg(
        pl.col("episode_id").first(),
        reward=to_signed(pl.col("value_num").first()).clip(-1.0, 1.0),
        feedback_ids=pl.col("feedback_id").sort(),
        quality=pl.col("value_num").first(),
        # OASST keeps a label's reviewer count and mean, not each reviewer's value: no spread
        n_raters=pl.col("attributes")
        .str.json_path_match("$.count")
        .cast(pl.Int64, strict=False)
        .first(),
    )
    by_emoji = emoji.group_by("turn_id").agg(
        pl.col("episode_id").first(),
        reward=(pl.col("value") * pl.col("value_num")).sum() / pl.col("value_num").sum(),
        feedback_ids=pl.col("feedback_id").sort(),
        emojis=pl.struct(name="value_text", count="value_num").sort_by("value_text"),
        # each counted emoji is one reader's vote
        n_raters=pl.col("value_num").sum().cast(pl.Int64),
    )
    by_emoji = by_emoji.join(_vote_shares(emoji), on="turn_id", how="left")
    by_emoji = by_emoji.join(by_label.select("turn_id"), on="turn_id", how="anti")
    both = pl.concat(
        [
            # a label is OASST's mean of its reviewers; emoji votes are weighted by their counts
            by_label.with_columns(
                rule_inputs=json_object(quality=pl.col("quality")), aggregation=pl.lit("mean")
            ).drop("quality"),
            by_emoji.with_columns(
                rule_inputs=json_object(emojis=pl.col("emojis")),
                aggregation=pl.lit("weighted_mean"),
            ).drop("emojis"),
        ],
        how="diagonal",
    )
    return both.select(
        "episode_id",
        target=pl.lit("turn"),
        target_id="turn_id",
        turn_id="turn_id",
        reward="reward",
        feedback_ids="feedback_ids",
        n_signals=pl.col("feedback_ids").list.len().cast(pl.Int64),
        aggregation=pl.when(pl.col("n_raters").fill_null(1) <= 1)
        .then(pl.lit("single"))
        .otherwise("aggregation"),
        n_raters=pl.when(pl.col("n_raters") >= 1).then("n_raters"),
        rater_spread="rater_spread",
        spread_measure=pl.when(pl.col("rater_spread").is_not_null()).then(pl.lit(MAJORITY_SHARE)),
        rule_inputs="rule_inputs",
    )


def _vote_shares(emoji: pl.DataFrame) -> pl.DataFrame:
    """turn_id, rater_spread: the share of a message's valued emoji votes whose value (+1, −1) is
    the most frequent one (a red flag votes −1, as in the reward)."""
    per_value = emoji.group_by("turn_id", "value").agg(votes=pl.col("value_num").sum())
    return per_value.group_by("turn_id").agg(
        rater_spread=pl.col("votes").max() / pl.col("votes").sum()
    )
