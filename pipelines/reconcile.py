"""Nothing lost: per raw file, records read == bronze rows + quarantine rows."""

from __future__ import annotations

import polars as pl

from pipelines.ingest import INGEST_LOG_SCHEMA, PARSE_QUARANTINE_SCHEMA
from pipelines.io import read_table, scan_parts
from pipelines.layout import Layout
from pipelines.schemas import polars_schema
from pipelines.schemas.bronze import bronze_models


def _rows_per_file(frames: list[pl.LazyFrame], name: str) -> pl.LazyFrame:
    if not frames:
        return pl.LazyFrame(schema={"file": pl.String, name: pl.UInt32})
    return pl.concat([f.select("file") for f in frames]).group_by("file").agg(pl.len().alias(name))


def reconcile_source(source: str, layout: Layout) -> pl.DataFrame:
    """One row per raw file known to the ingest log or present in bronze, with `balanced`.

    Counts come from the persisted parts, not from what the parser claimed, so a lost or
    duplicated part shows up as an imbalance.
    """
    log = read_table(layout.ingest_log(source), INGEST_LOG_SCHEMA).lazy().select("file", "records_read", "n_pending")
    bronze = [
        scan_parts(layout.bronze_dir(table), polars_schema(model))
        for table, model in bronze_models(source).items()
    ]
    quarantine = [scan_parts(layout.parse_quarantine_dir(source), PARSE_QUARANTINE_SCHEMA)]
    return (
        log.join(_rows_per_file(bronze, "bronze_rows"), on="file", how="full", coalesce=True)
        .join(_rows_per_file(quarantine, "quarantine_rows"), on="file", how="full", coalesce=True)
        .with_columns(
            pl.col("records_read").fill_null(0),
            pl.col("bronze_rows").fill_null(0).cast(pl.Int64),
            pl.col("quarantine_rows").fill_null(0).cast(pl.Int64),
            pl.col("n_pending").fill_null(0),
        )
        .with_columns(
            balanced=pl.col("records_read") == pl.col("bronze_rows") + pl.col("quarantine_rows")
        )
        .sort("file")
        .collect()
    )
