"""dialogue_feedback: thumbs ratings and explicit rewards on assistant turns (and whole
conversations).

Silver already quarantined orphans, out-of-range indexes and bad values, applied each dataset's
`turn_index` base and stored a re-delivered event once. Here one feedback EVENT (which may carry
both a `rating` and a `reward` row) is one signal; several events on one target are aggregated.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import aggregate, json_object, mapped
from pipelines.gold.raters import STD, rater, std_spread
from pipelines.gold.registry import Silver, rule

SIGNALS = ("rating", "reward")


def _events(silver: Silver) -> pl.DataFrame:
    """One row per feedback event with its rating and reward side by side."""
    rows = silver["feedback"].filter(
        pl.col("episode_id").str.starts_with("dialogue:")
        & pl.col("name").is_in(SIGNALS)
        & pl.col("target").is_in(["turn", "episode"])
    )
    # feedback_id is `dialogue:<event key>:<signal name>` (see transforms/dialogue/feedback.py).
    rows = rows.with_columns(event=pl.col("feedback_id").str.replace(r":(rating|reward)$", ""))
    return rows.group_by("event").agg(
        pl.col("episode_id", "turn_id", "target").first(),
        observed_at=pl.col("observed_at").min(),
        rater=rater().first(),
        feedback_ids=pl.col("feedback_id").sort(),
        rating=pl.col("value_num").filter(pl.col("name") == "rating").first(),
        reward=pl.col("value_num").filter(pl.col("name") == "reward").first(),
    )


def _rewardable(events: pl.DataFrame, turns: pl.DataFrame, roles: list[str]) -> pl.DataFrame:
    """Episode-level events, and turn events on a turn whose role earns rewards."""
    roles_of = turns.select("turn_id", role=pl.col("role"))
    joined = events.join(roles_of, on="turn_id", how="left")
    return joined.filter((pl.col("target") == "episode") | pl.col("role").is_in(roles))


@rule(
    "dialogue_feedback",
    1,
    "explicit reward wins, else rating +1/0/-1 → +0.8/0/-0.8; assistant turns only",
)
def dialogue_feedback(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    method = params["aggregation"]
    events = _rewardable(
        _events(silver), silver["turns"], list(params.get("reward_roles", ["assistant"]))
    )
    rating_key = pl.col("rating").cast(pl.Int64, strict=False).cast(pl.String)
    # A non-integral rating has no entry in the map: the event then counts only by its reward.
    events = (
        events.with_columns(
            mapped_rating=pl.when(pl.col("rating") == pl.col("rating").round()).then(
                mapped(rating_key, params["rating_map"])
            ),
        )
        .with_columns(
            value=pl.coalesce("reward", "mapped_rating"),
            target_id=pl.when(pl.col("target") == "turn")
            .then(pl.col("turn_id"))
            .otherwise(pl.col("episode_id")),
        )
        .filter(pl.col("value").is_not_null())
    )
    grouped = events.group_by("target", "target_id").agg(
        pl.col("episode_id", "turn_id").first(),
        reward=aggregate(pl.col("value"), method, pl.col("observed_at")),
        feedback_ids=pl.col("feedback_ids")
        .list.explode(keep_nulls=False, empty_as_null=False)
        .unique()
        .sort(),
        n_signals=pl.len().cast(pl.Int64),
        n_raters=pl.col("rater").n_unique().cast(pl.Int64),
        rater_spread=std_spread(pl.col("value")),
        inputs=pl.struct("rating", "reward", "mapped_rating", "value").sort_by(
            "observed_at", "event"
        ),
    )
    return grouped.select(
        "episode_id",
        "target",
        "target_id",
        turn_id=pl.when(pl.col("target") == "turn").then(pl.col("turn_id")),
        reward="reward",
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.when(pl.col("n_signals") == 1)
        .then(pl.lit("single"))
        .otherwise(pl.lit(method)),
        n_raters="n_raters",
        rater_spread="rater_spread",
        spread_measure=pl.lit(STD),
        rule_inputs=json_object(events=pl.col("inputs")),
    )
