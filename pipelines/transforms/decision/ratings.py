"""Scale of a decision's `outcome.rating`, settled by evidence (DESIGN §3 decision bullet).

A rating of exactly 1 is the top of 0–1 or the bottom of 1–5. A guess must never be able to flip
a reward's sign, so the scale is what the evidence proves, or `unknown`.
"""

from __future__ import annotations

import polars as pl

from pipelines.config.settings import Settings

# turnlake.toml `[decision.rating_scale]` values → the `feedback.scale` labels.
SCALE_LABELS = {"0-1": "[0,1]", "1-5": "1-5"}
UNKNOWN_SCALE = "unknown"
_EVIDENCE = ("rater", "file")  # whose other ratings settle a rating of exactly 1


def evidence_rows(decisions: pl.DataFrame, *keep: str) -> pl.DataFrame:
    """by (`rater` | `file`), key, above (rating > 1), below (rating < 1) and the `keep` columns:
    one row per rated decision and kind whose key is known."""
    r = pl.col("outcome_rating")
    rated = decisions.filter(r.is_not_null()).with_columns(
        rater=pl.when(pl.col("outcome_rated_by").is_not_null()).then(_rater())
    )
    keyed = [
        rated.select(*keep, by=pl.lit(by), key=by, above=r > 1, below=r < 1) for by in _EVIDENCE
    ]
    return pl.concat(keyed).drop_nulls("key")


def rating_evidence(decisions: pl.DataFrame) -> pl.DataFrame:
    """by, key, above, below: whether any rating of that rater / file is > 1, < 1. A small table
    (one row per rater and per file) over every decision: a partial rebuild is passed the one of
    the whole corpus, so its settled scales stay the same."""
    return (
        evidence_rows(decisions)
        .group_by("by", "key")
        .agg(pl.col("above").any(), pl.col("below").any())
        .sort("by", "key")
    )


def _with_scale_by_evidence(framed: pl.DataFrame, evidence: pl.DataFrame, by: str) -> pl.DataFrame:
    """`_by_<by>`: the scale the ratings of the row's rater / file prove: any rating > 1 ⇒ 1–5,
    any rating < 1 ⇒ 0–1 (1–5 has no 0 and no fraction below 1); both ⇒ no evidence; an unrated
    row ⇒ none."""
    found = evidence.filter(pl.col("by") == by).select(
        pl.col("key").alias(f"_key_{by}"), _above="above", _below="below"
    )
    key = pl.when(pl.col("outcome_rating").is_not_null()).then(pl.col(by)).alias(f"_key_{by}")
    joined = framed.with_columns(key).join(
        found, on=f"_key_{by}", how="left", maintain_order="left"
    )
    above, below = pl.col("_above"), pl.col("_below")
    scale = pl.when(above & ~below).then(pl.lit("1-5")).when(below & ~above).then(pl.lit("[0,1]"))
    return joined.with_columns(scale.alias(f"_by_{by}")).drop("_above", "_below", f"_key_{by}")


def _rater() -> pl.Expr:
    """Who rated, within a dataset: `ratedBy` as recorded; `self` is the deciding actor, so it is
    per actor."""
    rated_by = pl.col("outcome_rated_by").str.strip_chars().str.to_lowercase()
    own = pl.when(rated_by == "self").then(pl.col("actor_id").fill_null("?")).otherwise(pl.lit(""))
    return pl.concat_str(pl.col("dataset").fill_null(""), rated_by, own, separator="|")


def _configured_scale(decisions: pl.DataFrame, settings: Settings) -> pl.Expr:
    datasets = decisions.get_column("dataset").drop_nulls().unique().to_list()
    configured = {
        d: SCALE_LABELS[s] for d in datasets if (s := settings.rating_scale_for(d)) in SCALE_LABELS
    }
    return pl.col("dataset").replace_strict(configured, default=None, return_dtype=pl.String)


def settle_rating_scales(
    decisions: pl.DataFrame, settings: Settings, evidence: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Columns `rating_scale`, `scale_evidence`, `rating_reading` and `rater` for every rated
    decision.

    Evidence, first that speaks: the dataset's `[decision.rating_scale]` setting; the value
    itself (≠ 1); the rater's other ratings; the file's other ratings; a `wasGoodDecision: false`
    beside a 1 (the top of 0–1 for a decision its rater calls bad is excluded, so it is the
    bottom of 1–5). `true` settles nothing: the seed requires wasGoodDecision and makes the
    rating optional, so `true` may be a writer's default left beside a worst 1 of 5; reading that
    1 as the top of 0–1 would be a guess that could flip a sign.
    Reading: `ok`, `scale_unknown`, `off_scale` (the value does not exist on the configured
    scale), or `contradicts_was_good_decision` (the normalized rating's sign disagrees with
    wasGoodDecision). `evidence`: `rating_evidence` (of these decisions when not given)."""
    evidence = rating_evidence(decisions) if evidence is None else evidence
    r = pl.col("outcome_rating")
    rated = r.is_not_null()
    framed = decisions.with_columns(
        rater=pl.when(rated & pl.col("outcome_rated_by").is_not_null()).then(_rater()),
        _configured=_configured_scale(decisions, settings),
        _by_value=pl.when(r > 1).then(pl.lit("1-5")).when(r < 1).then(pl.lit("[0,1]")),
    )
    for by in _EVIDENCE:
        framed = _with_scale_by_evidence(framed, evidence, by)
    bottom_of_1_5 = (r == 1) & pl.col("outcome_was_good").not_()
    steps = [
        ("setting", pl.col("_configured")),
        ("value", pl.col("_by_value")),
        ("rater", pl.col("_by_rater")),
        ("file", pl.col("_by_file")),
        ("was_good_decision", pl.when(bottom_of_1_5).then(pl.lit("1-5"))),
    ]
    scale, how = pl.lit(UNKNOWN_SCALE), pl.lit("none")
    for name, found in reversed(steps):
        scale = pl.when(found.is_not_null()).then(found).otherwise(scale)
        how = pl.when(found.is_not_null()).then(pl.lit(name)).otherwise(how)
    settled = framed.with_columns(
        rating_scale=pl.when(rated).then(scale), scale_evidence=pl.when(rated).then(how)
    )
    return settled.with_columns(rating_reading=pl.when(rated).then(_reading())).drop(
        pl.selectors.starts_with("_")
    )


def normalized_rating(value: pl.Expr, scale: pl.Expr) -> pl.Expr:
    """A rating → [0, 1] by its scale: 1–5 → (r − 1) / 4, 0–1 as is; null when the scale is
    unknown."""
    return pl.when(scale == "1-5").then((value - 1.0) / 4.0).when(scale == "[0,1]").then(value)


def _reading() -> pl.Expr:
    r, scale, good = pl.col("outcome_rating"), pl.col("rating_scale"), pl.col("outcome_was_good")
    n = normalized_rating(r, scale)
    off_scale = ((scale == "1-5") & (r < 1)) | ((scale == "[0,1]") & (r > 1))
    contradicts = (good & (n < 0.5)) | (~good & (n > 0.5))
    return (
        pl.when(scale == UNKNOWN_SCALE)
        .then(pl.lit("scale_unknown"))
        .when(off_scale)
        .then(pl.lit("off_scale"))
        .when(contradicts.fill_null(False))
        .then(pl.lit("contradicts_was_good_decision"))
        .otherwise(pl.lit("ok"))
    )
