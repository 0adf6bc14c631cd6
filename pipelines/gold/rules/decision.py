"""decision_outcome: the later outcome of one decision (coordination decisions, human or AI).

Silver labels each `outcome.rating` with its scale: a value ≤ 1 is read as the 0–1 scale, a value
> 1 as the 1–5 scale, and a rating of exactly 1 is marked ambiguous (top of 0–1, or bottom of 1–5).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.gold.common import aggregate, json_object, mapped, sorted_ids, to_signed
from pipelines.gold.registry import Silver, rule


def _normalized_rating() -> pl.Expr:
    """rating → [0, 1] by its scale: 1-5 → (r − 1) / 4; [0,1] as is."""
    r = pl.col("value_num")
    return pl.when(pl.col("scale") == "1-5").then((r - 1.0) / 4.0).when(pl.col("scale") == "[0,1]").then(r)


@rule("decision_outcome", 1, "rating normalized by scale then 2n − 1; wasGoodDecision ±1 when unrated")
def decision_outcome(silver: Silver, params: dict[str, Any]) -> pl.DataFrame:
    method = params["aggregation"]
    good = {str(k).lower(): v for k, v in params["was_good_rewards"].items()}
    signals = silver["feedback"].filter(
        (pl.col("target") == "decision") & pl.col("name").is_in(["rating", "was_good_decision"])
    ).with_columns(
        value=pl.when(pl.col("name") == "rating").then(to_signed(_normalized_rating()))
        .otherwise(mapped(pl.col("value_num").cast(pl.Boolean).cast(pl.String), good)),
        ambiguous=(pl.col("name") == "rating")
        & (pl.col("attributes").str.json_path_match("$.ambiguous_scale") == "true"),
    ).filter(pl.col("value").is_not_null())
    # A rating, where there is one, wins over wasGoodDecision.
    has_rating = pl.col("name").eq("rating").any().over("decision_id")
    used = signals.filter(~has_rating | (pl.col("name") == "rating"))
    grouped = used.group_by("decision_id").agg(
        pl.col("episode_id").first(),
        reward=aggregate(pl.col("value"), method, pl.col("observed_at")),
        feedback_ids=sorted_ids(),
        n_signals=pl.len().cast(pl.Int64),
        ambiguous=pl.col("ambiguous").any(),
        signals=pl.struct("name", "value_num", "scale", "source_kind", "value").sort_by("name", "feedback_id"),
    )
    decisions = silver["decisions"].select("decision_id", "turn_id", "suggestion_followed")
    rows = grouped.join(decisions, on="decision_id", how="left")
    return rows.select(
        "episode_id", target=pl.lit("decision"), target_id="decision_id", turn_id="turn_id", decision_id="decision_id",
        reward="reward",
        feedback_ids="feedback_ids", n_signals="n_signals",
        aggregation=pl.when(pl.col("n_signals") == 1).then(pl.lit("single")).otherwise(pl.lit(method)),
        rule_inputs=json_object(signals=pl.col("signals"), ambiguous_rating_scale=pl.col("ambiguous")),
        flags=pl.when(pl.col("ambiguous")).then(pl.lit(["ambiguous_rating_scale"], pl.List(pl.String))),
        suggestion_followed="suggestion_followed",
    )
