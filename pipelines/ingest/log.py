"""The per-source ingest log: which raw file's rows live in which bronze part (the bronze table
manifest), and the parts it names as current."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.ingest.batches import QUARANTINE_PART, part_path
from pipelines.schemas.bronze import bronze_models
from pipelines.storage.files import read_table, remove_file, scan_parquet
from pipelines.storage.layout import Layout

INGEST_LOG_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "file": pl.String,
        "fingerprint": pl.String,
        "size_bytes": pl.Int64,
        "mtime_ns": pl.Int64,  # modification time when last read: same size and mtime → not re-read
        "parser_version": pl.String,
        "parse_settings": pl.String,
        # what the file's rows are a function of: fingerprint, parser, settings
        "file_id": pl.String,
        "part_id": pl.String,  # the batch part holding the file's rows
        "tables": pl.List(pl.String),
        "records_read": pl.Int64,
        "n_bronze": pl.Int64,
        "n_quarantine": pl.Int64,
        "n_pending": pl.Int64,
        "n_forgotten": pl.Int64,  # records purged because they mention a forgotten subject
        "pending_locators": pl.List(pl.String),
        "run_id": pl.String,
        "parsed_at": pl.Datetime("us", "UTC"),
        "missing_since": pl.Datetime("us", "UTC"),
    }
)


def read_log(layout: Layout, source: str) -> pl.DataFrame:
    """The source's ingest log; a log written by an older layout counts as empty (full re-parse)."""
    log = read_table(layout.ingest_log(source), INGEST_LOG_SCHEMA)
    return log if log.schema == INGEST_LOG_SCHEMA else pl.DataFrame(schema=INGEST_LOG_SCHEMA)


def current_parts(layout: Layout, source: str, table: str) -> list[Path]:
    """The parts of one bronze table (or QUARANTINE_PART) that the ingest log names as current."""
    log = read_log(layout, source).filter(pl.col("tables").list.contains(table))
    return [
        part_path(layout, source, table, p)
        for p in sorted(set(log.get_column("part_id").to_list()))
    ]


def scan_current(layout: Layout, source: str, table: str, schema: pl.Schema) -> pl.LazyFrame:
    parts = current_parts(layout, source, table)
    return scan_parquet(parts, schema=schema) if parts else pl.DataFrame(schema=schema).lazy()


def collect_bronze_garbage(layout: Layout, source: str) -> None:
    """Remove parts the ingest log no longer names, and temp files of killed writes.

    Run only after the DuckDB views were rebuilt: until then the old views may still read them.
    """
    keep = {
        str(p)
        for table in [*bronze_models(source), QUARANTINE_PART]
        for p in current_parts(layout, source, table)
    }
    folders = [layout.bronze_dir(t) for t in bronze_models(source)] + [
        layout.parse_quarantine_dir(source)
    ]
    for folder in folders:
        if folder.is_dir():
            for path in folder.iterdir():
                if path.suffix in (".parquet", ".tmp") and str(path) not in keep:
                    remove_file(path)
