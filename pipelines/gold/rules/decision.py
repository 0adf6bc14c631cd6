"""decision_outcome: the later outcome of one decision (coordination decisions, human or AI).

Silver settles each `outcome.rating`'s scale by evidence and says whether it can be read
(`feedback.attributes.reading`, see `pipelines.transforms.decision.ratings`). This rule turns a
readable rating into a reward; a rating that cannot be read (scale unknown, off its configured
scale, or contradicting wasGoodDecision) gives the decision no reward at all — neither from the
rating nor from wasGoodDecision, since either would be a guess that may flip a sign. Without a
rating, wasGoodDecision gives the reward.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import aggregate, json_object, mapped, sorted_ids, to_signed
from pipelines.gold.raters import MAJORITY_SHARE, STD, majority_share, rater, std_spread
from pipelines.gold.registry import Silver, rule
from pipelines.transforms.decision.ratings import normalized_rating

# A rating whose scale was not known from a setting or its own value: the reward rests on inference.
_INFERRED = ("rater", "file", "was_good_decision")


def _signals(feedback: pl.DataFrame, was_good_rewards: dict[str, float]) -> pl.DataFrame:
    is_rating = pl.col("name") == "rating"
    # the ratings' attributes alone are parsed (`when` computes its branch on every row)
    attribute = pl.when(is_rating).then(pl.col("attributes")).str.json_path_match
    return feedback.filter(
        (pl.col("target") == "decision") & pl.col("name").is_in(["rating", "was_good_decision"])
    ).with_columns(
        evidence=pl.when(is_rating).then(attribute("$.scale_evidence")),
        reading=pl.when(is_rating).then(attribute("$.reading")),
        value=pl.when(is_rating)
        .then(to_signed(normalized_rating(pl.col("value_num"), pl.col("scale"))))
        .otherwise(mapped(pl.col("value_num").cast(pl.Boolean).cast(pl.String), was_good_rewards)),
    )


@rule(
    "decision_outcome",
    2,
    "readable rating normalized by its settled scale then 2n − 1; else no reward; "
    "wasGoodDecision ±1 when unrated",
)
def decision_outcome(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    method = params["aggregation"]
    good = {str(k).lower(): v for k, v in params["was_good_rewards"].items()}
    signals = _signals(silver["feedback"], good)
    # A rating, where there is one, decides: readable → its value; unreadable → no reward for the
    # decision.
    has_rating = (pl.col("name") == "rating").any().over("decision_id")
    unreadable = (
        ((pl.col("name") == "rating") & (pl.col("reading") != "ok")).any().over("decision_id")
    )
    used = signals.filter(~unreadable & (~has_rating | (pl.col("name") == "rating"))).filter(
        pl.col("value").is_not_null()
    )
    grouped = used.group_by("decision_id").agg(
        pl.col("episode_id").first(),
        reward=aggregate(pl.col("value"), method, pl.col("observed_at")),
        feedback_ids=sorted_ids(),
        n_signals=pl.len().cast(pl.Int64),
        # a decision's signals are all ratings or all wasGoodDecision verdicts (one rater kind each)
        n_raters=rater().n_unique().cast(pl.Int64),
        votes=(pl.col("name") == "was_good_decision").all(),
        std=std_spread(pl.col("value")),
        share=majority_share(pl.col("value")),
        inferred=pl.col("evidence").is_in(_INFERRED).any(),
        signals=pl.struct("name", "value_num", "scale", "evidence", "source_kind", "value").sort_by(
            "name", "feedback_id"
        ),
    )
    decisions = silver["decisions"].select("decision_id", "turn_id", "suggestion_followed")
    rows = grouped.join(decisions, on="decision_id", how="left")
    return rows.select(
        "episode_id",
        target=pl.lit("decision"),
        target_id="decision_id",
        turn_id="turn_id",
        decision_id="decision_id",
        reward="reward",
        feedback_ids="feedback_ids",
        n_signals="n_signals",
        aggregation=pl.when(pl.col("n_signals") == 1)
        .then(pl.lit("single"))
        .otherwise(pl.lit(method)),
        n_raters="n_raters",
        rater_spread=pl.when("votes").then("share").otherwise("std"),
        spread_measure=pl.when("votes").then(pl.lit(MAJORITY_SHARE)).otherwise(pl.lit(STD)),
        rule_inputs=json_object(
            signals=pl.col("signals"), rating_scale_inferred=pl.col("inferred")
        ),
        flags=pl.when(pl.col("inferred")).then(
            pl.lit(["rating_scale_inferred"], pl.List(pl.String))
        ),
        suggestion_followed="suggestion_followed",
    )
