"""Later ratings (`decision_rating_events`, written by `turnlake decision rate`) → `rating`
feedback rows, and the supersede rule over every rating of a decision (docs/rewards.md).

Supersede rule: for one decision and one rater kind (`rated_by`: user, community, system, and
the source's own `self`), the rating observed last is the current one; every earlier rating of
that pair stays in `feedback` as `rating_superseded` (no rule rewards it; `turnlake decision
inspect` shows the history). Ratings observed at the same instant: the one with the greater
feedback id wins (arbitrary, but the same on every rebuild). A rating without a time stamp is
older than any with one. A source's own `outcome.rating` takes part like any other rating.

Events on a decision that does not exist are quarantined (`orphan`); the same event id written
twice with different content keeps the first copy (file, line order) and quarantines the others
(`duplicate_conflict`); identical copies collapse.
"""

from __future__ import annotations

import polars as pl

from pipelines.transforms.decision.common import silver_quarantine
from pipelines.transforms.decision.ratings import SCALE_LABELS, normalized_rating
from pipelines.transforms.stable_ids import json_literal, json_string, stable_hash_expr

SUPERSEDED = {"rating": "rating_superseded", "was_good_decision": "was_good_decision_superseded"}
_SOURCE_KIND = {"user": "human", "community": "human", "system": "system"}
_CONTENT = ("decision_id", "rating", "scale", "rated_by", "rated_at", "reason")


def _quarantine(rows: pl.DataFrame, kind: str, message: pl.Expr) -> pl.DataFrame:
    raw = pl.struct(*_CONTENT[:-2], pl.col("rated_at").dt.to_string()).struct.json_encode()
    return silver_quarantine(rows, kind, message, raw)


def _first_copies(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    ranked = events.sort("file", "line").with_columns(
        _first=pl.int_range(pl.len()).over("event_id") == 0,
        _same=pl.struct(_CONTENT).hash() == pl.struct(_CONTENT).hash().first().over("event_id"),
    )
    conflicts = ranked.filter(~pl.col("_first") & ~pl.col("_same"))
    message = pl.format("rating event {} was written before with other content", "event_id")
    return ranked.filter("_first"), _quarantine(conflicts, "duplicate_conflict", message)


def rating_event_feedback(
    events: pl.DataFrame, decisions: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(feedback rows of the events on kept decisions, silver quarantine rows)."""
    kept, conflicts = _first_copies(events)
    known = decisions.select("decision_id", "episode_id")
    rated = kept.join(known, on="decision_id", how="inner")
    orphans = kept.join(known, on="decision_id", how="anti")
    orphan_rows = _quarantine(
        orphans, "orphan", pl.format("rating event for unknown decision {}", "decision_id")
    )
    rated = rated.with_columns(
        scale=pl.col("scale").replace_strict(SCALE_LABELS, return_dtype=pl.String)
    )
    rated = rated.join(_current_verdicts(rated, decisions), on="decision_id", how="left")
    attributes = pl.struct(
        "rated_by",
        "reason",
        "event_id",
        pl.lit("stated").alias("scale_evidence"),
        _reading().alias("reading"),
        source_file="file",
        locator="locator",
    ).struct.json_encode()
    feedback = rated.select(
        "episode_id",
        "decision_id",
        target=pl.lit("decision"),
        name=pl.lit("rating"),
        value_num="rating",
        value_text=pl.lit(None, pl.String),
        scale="scale",
        source_kind=pl.col("rated_by").replace_strict(_SOURCE_KIND, return_dtype=pl.String),
        observed_at="rated_at",
        attributes=attributes,
        feedback_id=stable_hash_expr(json_literal("rating_event"), json_string("event_id")),
        turn_id=pl.lit(None, pl.String),
    )
    return feedback, pl.concat([conflicts, orphan_rows])


def _current_verdicts(rated: pl.DataFrame, decisions: pl.DataFrame) -> pl.DataFrame:
    """Per decision, its source's `wasGoodDecision` unless a later event of the same rater kind
    supersedes it."""
    verdicts = decisions.filter(pl.col("outcome_was_good").is_not_null()).select(
        "decision_id",
        "outcome_was_good",
        rated_by=pl.col("outcome_rated_by").str.to_lowercase(),
        verdict_at="outcome_rated_at",
    )
    latest = rated.group_by("decision_id", "rated_by").agg(last_at=pl.col("rated_at").max())
    superseded = verdicts.join(latest, on=["decision_id", "rated_by"]).filter(
        pl.col("verdict_at").is_null() | (pl.col("last_at") > pl.col("verdict_at"))
    )
    current = verdicts.join(superseded.select("decision_id"), on="decision_id", how="anti")
    return current.select("decision_id", verdict="outcome_was_good")


def _reading() -> pl.Expr:
    """`ok`, or `contradicts_was_good_decision` against a current verdict (as for the source's
    own ratings: a contradiction gives the decision no reward)."""
    n = normalized_rating(pl.col("rating"), pl.col("scale"))
    verdict = pl.col("verdict")
    contradicts = (verdict & (n < 0.5)) | (~verdict & (n > 0.5))
    return (
        pl.when(contradicts.fill_null(False))
        .then(pl.lit("contradicts_was_good_decision"))
        .otherwise(pl.lit("ok"))
    )


def supersede_ratings(feedback: pl.DataFrame) -> pl.DataFrame:
    """Every `rating` but the last per (decision, rater kind) renamed `rating_superseded`; a
    `was_good_decision` of that pair observed before its last rating renamed
    `was_good_decision_superseded`."""
    is_rating = pl.col("name") == "rating"
    is_verdict = pl.col("name") == "was_good_decision"
    kind = pl.col("attributes").str.json_path_match("$.rated_by").str.to_lowercase()
    key = pl.concat_str(
        "decision_id", pl.coalesce(kind, pl.lit("?") + pl.col("feedback_id")), separator="|"
    )
    order = pl.struct(
        pl.col("observed_at").is_not_null().alias("has_time"), "observed_at", "feedback_id"
    )
    ranked = feedback.with_columns(_key=pl.when(is_rating | is_verdict).then(key)).with_columns(
        _latest=pl.col("feedback_id")
        .filter(is_rating)
        .sort_by(order.filter(is_rating))
        .last()
        .over("_key"),
        _latest_at=pl.col("observed_at").filter(is_rating).max().over("_key"),
    )
    old_rating = is_rating & (pl.col("feedback_id") != pl.col("_latest"))
    old_verdict = (
        is_verdict
        & (
            pl.col("observed_at").is_null() | (pl.col("observed_at") < pl.col("_latest_at"))
        ).fill_null(False)
        & pl.col("_latest_at").is_not_null()
    )
    renamed = pl.col("name").replace_strict(SUPERSEDED, default=pl.col("name"))
    return ranked.with_columns(
        name=pl.when(old_rating | old_verdict).then(renamed).otherwise(pl.col("name"))
    ).drop("_key", "_latest", "_latest_at")
