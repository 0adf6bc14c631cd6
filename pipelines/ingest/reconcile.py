"""Nothing lost: per raw file, records read == bronze rows + quarantine rows."""

from __future__ import annotations

import polars as pl

from pipelines.ingest.batches import PARSE_QUARANTINE_SCHEMA, QUARANTINE_PART
from pipelines.ingest.log import current_parts, read_log
from pipelines.schemas.bronze_dtypes import bronze_schemas
from pipelines.storage.files import scan_parquet
from pipelines.storage.layout import Layout

# what `reconciliation_totals` sums per source
TOTALS = (
    "files",
    "records_read",
    "bronze_rows",
    "quarantine_rows",
    "n_pending",
    "unbalanced_files",
)

_COUNTS = pl.Schema({"file": pl.String, "n": pl.Int64})


def _rows_per_file(
    layout: Layout, source: str, table: str, schema: pl.Schema, log: pl.DataFrame
) -> pl.DataFrame:
    """Rows per raw file in the parts `log` names; a named part that is gone counts 0 rows."""
    parts = [p for p in current_parts(layout, source, table, log) if p.exists()]
    if not parts:
        return pl.DataFrame(schema=_COUNTS)
    return (
        scan_parquet(parts, schema=schema)
        .group_by("file")
        .agg(pl.len().cast(pl.Int64).alias("n"))
        .collect()
    )


def reconcile_source(source: str, layout: Layout) -> pl.DataFrame:
    """One row per raw file in the ingest log, with `balanced`.

    Counts come from the persisted parts, not from what the parser claimed, so a lost or
    duplicated part shows up as an imbalance.
    """
    # read once, for the parts of every table too (a read opens the log's Delta table afresh
    # outside a build: ~10 ms apiece, four to seven times per source)
    full_log = read_log(layout, source)
    log = full_log.select("file", "records_read", "n_pending", "n_forgotten", "missing_since")
    bronze = [
        _rows_per_file(layout, source, t, schema, full_log)
        for t, schema in bronze_schemas(source).items()
    ]
    bronze_counts = pl.concat(bronze).group_by("file").agg(pl.col("n").sum().alias("bronze_rows"))
    quarantine_counts = _rows_per_file(
        layout, source, QUARANTINE_PART, PARSE_QUARANTINE_SCHEMA, full_log
    ).rename({"n": "quarantine_rows"})
    return (
        log.join(bronze_counts, on="file", how="left")
        .join(quarantine_counts, on="file", how="left")
        .with_columns(pl.col("bronze_rows", "quarantine_rows").fill_null(0))
        .with_columns(
            balanced=pl.col("records_read")
            == pl.col("bronze_rows") + pl.col("quarantine_rows") + pl.col("n_forgotten")
        )
        .sort("file")
    )


def reconciliation_totals(per_file: pl.DataFrame) -> dict[str, int]:
    """A source's totals over `reconcile_source`'s rows: files, records read, bronze, quarantine
    and pending rows, and how many files do not balance (the `nothing_lost` check's metadata,
    which the build summary reads back)."""
    totals = per_file.select(
        pl.len().alias("files"),
        pl.col("records_read", "bronze_rows", "quarantine_rows", "n_pending").sum(),
        (~pl.col("balanced")).sum().alias("unbalanced_files"),
    )
    return {k: int(totals[k][0] or 0) for k in TOTALS}
