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
    )
    by_emoji = emoji.group_by("turn_id").agg(
        pl.col("episode_id").first(),
        reward=(pl.col("value") * pl.col("value_num")).sum() / pl.col("value_num").sum(),
        feedback_ids=pl.col("feedback_id").sort(),
        emojis=pl.struct(name="value_text", count="value_num").sort_by("value_text"),
    )
    by_emoji = by_emoji.join(by_label.select("turn_id"), on="turn_id", how="anti")
    both = pl.concat(
        [
            by_label.with_columns(rule_inputs=json_object(quality=pl.col("quality"))).drop(
                "quality"
            ),
            by_emoji.with_columns(rule_inputs=json_object(emojis=pl.col("emojis"))).drop("emojis"),
        ]
    )
    return both.select(
        "episode_id",
        target=pl.lit("turn"),
        target_id="turn_id",
        turn_id="turn_id",
        reward="reward",
        feedback_ids="feedback_ids",
        n_signals=pl.col("feedback_ids").list.len().cast(pl.Int64),
        aggregation=pl.when(pl.col("feedback_ids").list.len() == 1)
        .then(pl.lit("single"))
        .otherwise(pl.lit("weighted_mean")),
        rule_inputs="rule_inputs",
    )
