"""Shared by the decision silver builders: the source name, its bronze tables, and the silver
quarantine row every builder writes for a record it rejects."""

import polars as pl

SOURCE = "decision"
TABLE = "decision_records"
RATINGS_TABLE = "decision_rating_events"
REPLAYS_TABLE = "decision_replay_results"


def silver_quarantine(
    rows: pl.DataFrame, kind: str, message: pl.Expr, raw: pl.Expr
) -> pl.DataFrame:
    """One silver quarantine row per row of `rows` (which carry `file` and `locator`)."""
    return rows.select(
        source=pl.lit(SOURCE),
        file="file",
        locator="locator",
        error_kind=pl.lit(kind),
        message=message,
        raw=raw,
        stage=pl.lit("silver"),
        run_id=pl.lit(None, pl.String),
    )
