"""Feedback screened against the score configs (scores.toml, pipelines/config/scores.py).

Run once for every source, in `units.transform`, on what the source's `to_silver` made: a feedback
row whose name has no config is quarantined as `not_configured`; one whose source, scale, value or
label does not fit its config as `score_config`, the message naming the config and what failed.
One join of the feedback with the registry as a frame, no Python per row. Row-local, so it keeps
the transform unit-local (a row's file, when its attributes do not name one, comes from its own
episode, which is in the same unit).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from pipelines.config.scores import SCALES, ScoreConfig
from pipelines.schemas import conform, silver_schema
from pipelines.transforms.polars_engine import TRANSFORM_ENGINE

NOT_CONFIGURED = "not_configured"
SCORE_CONFIG = "score_config"
NO_FILE = "(no source file recorded for this feedback)"
OFF_SCALE = "off_scale"  # transforms/decision/ratings.py's reading of such a rating

_SCALES = pl.DataFrame(
    {
        "scale": list(SCALES),
        "_numeric": [rule.numeric for rule in SCALES.values()],
        "_low": [rule.low for rule in SCALES.values()],
        "_high": [rule.high for rule in SCALES.values()],
        "_whole": [rule.whole for rule in SCALES.values()],
        "_needs_text": [rule.needs_text for rule in SCALES.values()],
    },
    schema_overrides={"_low": pl.Float64, "_high": pl.Float64},
)


def registry_frame(configs: Mapping[str, ScoreConfig]) -> pl.DataFrame:
    """One row per configured name: its sources, scales, range and categories (null: any)."""
    rows = [
        {
            "name": name,
            "_sources": list(c.sources),
            "_scales": list(c.scales),
            "_range_low": c.range[0] if c.range else None,
            "_range_high": c.range[1] if c.range else None,
            "_categories": c.categories,
        }
        for name, c in configs.items()
    ]
    schema = {
        "name": pl.String,
        "_sources": pl.List(pl.String),
        "_scales": pl.List(pl.String),
        "_range_low": pl.Float64,
        "_range_high": pl.Float64,
        "_categories": pl.List(pl.String),
    }
    return pl.DataFrame(rows, schema=schema)


def screen(
    feedback: pl.DataFrame,
    source: str,
    configs: Mapping[str, ScoreConfig],
    where: str,
) -> pl.DataFrame:
    """The feedback with two more columns: `_error_kind` and `_message` (null where the row fits
    its config). `where` names the registry in messages (e.g. `scores.toml`)."""
    joined = feedback.join(
        registry_frame(configs), on="name", how="left", maintain_order="left"
    ).join(_SCALES, on="scale", how="left", maintain_order="left")
    judged = joined.with_columns(_message=_problem(source, where)).with_columns(
        _error_kind=pl.when(pl.col("_message").is_null())
        .then(pl.lit(None, pl.String))
        .when(pl.col("_scales").is_null())
        .then(pl.lit(NOT_CONFIGURED))
        .otherwise(pl.lit(SCORE_CONFIG))
    )
    return judged.drop(
        pl.selectors.starts_with("_") - pl.selectors.by_name("_error_kind", "_message")
    )


def _problem(source: str, where: str) -> pl.Expr:
    name, scale, value, text = (pl.col(c) for c in ("name", "scale", "value_num", "value_text"))
    config = pl.format("score config `{}` ({})", name, pl.lit(where))
    low, high = pl.col("_low"), pl.col("_high")
    off_scale = (low.is_not_null() & (value < low)) | (high.is_not_null() & (value > high))
    # A decision rating off the scale its dataset is configured for stays in feedback, marked
    # `reading: off_scale` by its source: the decision rule needs it there to withhold the
    # decision's reward; quarantined, wasGoodDecision alone would decide a contradicted outcome.
    # read only where the value is off scale: parsing every row's attributes was most of the cost
    reading = pl.when(off_scale).then(pl.col("attributes")).str.json_path_match("$.reading")
    kept_as_unusable = reading == OFF_SCALE
    lo, hi = pl.col("_range_low"), pl.col("_range_high")
    # A label that reads as the row's own number ("0.8" beside 0.8) is that number, not a label.
    is_its_number = text.str.strip_chars().cast(pl.Float64, strict=False) == value
    bad_label = (
        pl.col("_categories").is_not_null()
        & text.is_not_null()
        & ~is_its_number.fill_null(False)
        & ~pl.col("_categories").list.contains(text)
    )
    return (
        pl.when(pl.col("_scales").is_null())
        .then(pl.format("feedback name `{}` has no score config ({})", name, pl.lit(where)))
        .when(~pl.col("_sources").list.contains(pl.lit(source)))
        .then(
            pl.format(
                "{} from source {} is not allowed by {}: sources {}",
                name,
                pl.lit(source),
                config,
                pl.col("_sources").list.join(", "),
            )
        )
        .when(~pl.col("_scales").list.contains(scale))
        .then(
            pl.format(
                "{} on scale {} is not allowed by {}: scales {}",
                name,
                scale,
                config,
                pl.col("_scales").list.join(", "),
            )
        )
        .when(pl.col("_numeric") & (value.is_null() | ~value.is_finite()))
        .then(pl.format("{} has no finite number on scale {} of {}", name, scale, config))
        .when((off_scale & ~kept_as_unusable.fill_null(False)).fill_null(False))
        .then(pl.format("{} {} is outside scale {} of {}", name, value, scale, config))
        .when(pl.col("_whole") & (value != value.floor()))
        .then(
            pl.format("{} {} is not a whole number on scale {} of {}", name, value, scale, config)
        )
        .when(pl.col("_needs_text") & text.is_null())
        .then(pl.format("{} on scale {} has no label (value_text) in {}", name, scale, config))
        .when(lo.is_not_null() & value.is_not_null() & ~value.is_between(lo, hi))
        .then(pl.format("{} {} is outside range [{}, {}] of {}", name, value, lo, hi, config))
        .when(bad_label)
        .then(
            pl.format(
                "{} label {} is not a category of {}: categories {}",
                name,
                text,
                config,
                pl.col("_categories").list.join(", "),
            )
        )
        .otherwise(pl.lit(None, pl.String))
    )


def screened_silver(
    source: str,
    tables: Mapping[str, pl.DataFrame],
    configs: Mapping[str, ScoreConfig],
    where: str,
    excerpt_chars: int,
) -> dict[str, pl.DataFrame]:
    """`tables` (one source's conformed silver) with the feedback that does not fit its score
    config moved to the quarantine."""
    out = dict(tables)
    feedback = out.get("feedback")
    if feedback is None or feedback.is_empty():
        return out
    judged = screen(feedback, source, configs, where)
    fits = pl.col("_error_kind").is_null()
    out["feedback"] = judged.filter(fits).drop("_error_kind", "_message")
    rejected = judged.filter(~fits)
    if rejected.is_empty():
        return out
    rows = _quarantine_rows(rejected, source, out.get("episodes"), excerpt_chars)
    before = out.get("quarantine")
    out["quarantine"] = rows if before is None else pl.concat([before, rows])
    return out


def _quarantine_rows(
    rejected: pl.DataFrame, source: str, episodes: pl.DataFrame | None, excerpt_chars: int
) -> pl.DataFrame:
    files = (
        episodes.select("episode_id", _episode_file="source_file")
        if episodes is not None
        else pl.DataFrame(schema={"episode_id": pl.String, "_episode_file": pl.String})
    )
    attribute = pl.col("attributes").str.json_path_match
    record = pl.struct(
        *(c for c in silver_schema("feedback").names() if c != "observed_at"),
        pl.col("observed_at").dt.to_string(),
    ).struct.json_encode()
    rows = rejected.join(
        files.unique("episode_id"), on="episode_id", how="left", maintain_order="left"
    ).select(
        source=pl.lit(source),
        # the row's own file first: its locator (a feedback event's line) points into it, not
        # into the episode's file (a dialogue's events live beside its conversations)
        file=pl.coalesce(
            attribute("$.file"), attribute("$.source_file"), "_episode_file", pl.lit(NO_FILE)
        ),
        locator=pl.coalesce(attribute("$.locator"), pl.format("feedback {}", "feedback_id")),
        error_kind="_error_kind",
        message="_message",
        raw=record.str.slice(0, excerpt_chars),
        stage=pl.lit("silver"),
        run_id=pl.lit(None, pl.String),
    )
    return conform(rows.lazy(), silver_schema("quarantine")).collect(engine=TRANSFORM_ENGINE)
