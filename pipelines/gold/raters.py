"""Who rated a target, how many of them, and how far apart they were (gold `turn_rewards`).

A reward rule that combines several people's scores of one turn or decision keeps, beside the
combined reward, `n_raters` (distinct raters), `aggregation` (how they were combined) and the
spread: the population standard deviation of the values combined when they are numbers, or the
share of the majority value when they are votes (booleans, categories, thumbs). Rules whose
reward is not a combination of raters' scores (a judge's stance, an outcome, a system signal)
leave the three null.

`label_agreement` turns the spread into one number in [0, 1] for the release minimum
(`[release] min_label_agreement`): the majority share as it is, a standard deviation `s` of values
in [-1, 1] (where `s` is at most 1) as 1 − s.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipelines.schemas.gold import SPREAD_MEASURES

STD, MAJORITY_SHARE = SPREAD_MEASURES

# Reasons a label is left out of a release by the minimum (manifest `left_out.labels`).
BELOW_MIN_RATERS = "below_min_raters"
BELOW_MIN_AGREEMENT = "below_min_agreement"
AGREEMENT_NOT_RECORDED = "agreement_not_recorded"


def rater() -> pl.Expr:
    """Who gave a feedback row: the person the source names (`user_id`, also inside `extra`), else
    the rater kind a decision rating records (`rated_by`: user, community, system, self — one
    current rating each, silver supersedes the rest), else the row itself (a source that names no
    rater: each row counts as one)."""
    attrs = pl.col("attributes")
    return pl.coalesce(
        attrs.str.json_path_match("$.user_id"),
        attrs.str.json_path_match("$.extra.user_id"),
        attrs.str.json_path_match("$.rated_by").str.to_lowercase(),
        pl.col("feedback_id"),
    )


def std_spread(values: pl.Expr) -> pl.Expr:
    """Aggregation: population standard deviation of the raters' values (0 for one rater).

    Sorted first: Polars' std is an online sum whose last bits follow the order values arrive
    in, and a parallel group_by does not keep that order from run to run."""
    return values.sort().std(ddof=0)


def majority_share(values: pl.Expr) -> pl.Expr:
    """Aggregation: the share of the raters' values that are the most frequent value."""
    return values.unique_counts().max() / values.len()


def label_agreement() -> pl.Expr:
    """Row-wise agreement of a reward's raters in [0, 1] (see the module docstring); null when the
    rule records no spread."""
    spread = pl.col("rater_spread")
    return (
        pl.when(pl.col("spread_measure") == MAJORITY_SHARE)
        .then(spread)
        .when(pl.col("spread_measure") == STD)
        .then(1.0 - spread)
    )


@dataclass(frozen=True)
class LabelMinimum:
    """`[release] min_raters` / `min_label_agreement`: what a rater-combined label needs to be
    released. None: no minimum."""

    min_raters: int | None = None
    min_agreement: float | None = None

    @property
    def active(self) -> bool:
        return self.min_raters is not None or self.min_agreement is not None


def released_labels(
    turn_rewards: pl.DataFrame, minimum: LabelMinimum
) -> tuple[pl.DataFrame, dict[str, int]]:
    """(the rewards a release may use, how many were left out by reason). Only rewards combined
    from raters (`n_raters` set) are held to the minimum; the first reason that fails is counted."""
    if not minimum.active:
        return turn_rewards, {}
    rated = pl.col("n_raters").is_not_null()
    few = pl.lit(False)
    if minimum.min_raters is not None:
        few = rated & (pl.col("n_raters") < minimum.min_raters)
    unknown = pl.lit(False)
    disagree = pl.lit(False)
    if minimum.min_agreement is not None:
        unknown = rated & label_agreement().is_null()
        disagree = rated & (label_agreement() < minimum.min_agreement).fill_null(False)
    reason = (
        pl.when(few)
        .then(pl.lit(BELOW_MIN_RATERS))
        .when(unknown)
        .then(pl.lit(AGREEMENT_NOT_RECORDED))
        .when(disagree)
        .then(pl.lit(BELOW_MIN_AGREEMENT))
    )
    marked = turn_rewards.with_columns(_left_out=reason)
    counts = marked.get_column("_left_out").drop_nulls().value_counts()
    out = dict(zip(counts.get_column("_left_out"), counts.get_column("count"), strict=True))
    reasons = (BELOW_MIN_RATERS, AGREEMENT_NOT_RECORDED, BELOW_MIN_AGREEMENT)
    return marked.filter(pl.col("_left_out").is_null()).drop("_left_out"), {
        r: int(out.get(r, 0)) for r in reasons
    }
