"""DuckDB as the SQL lens: one view per table over the Parquet files, no data copied."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import polars as pl

from pipelines.layout import Layout
from pipelines.schemas.bronze import all_bronze_models
from pipelines.schemas.silver import SILVER_MODELS


def _literal(text: str) -> str:
    # DDL cannot take bound parameters; paths are the only values spliced in, quoted here.
    return "'" + text.replace("'", "''") + "'"


def view_sources(layout: Layout) -> dict[str, str]:
    """View name → Parquet path or glob, for every table that currently has data."""
    views = {table: str(layout.silver(table).resolve()) for table in SILVER_MODELS
             if layout.silver(table).exists()}
    for table in all_bronze_models():
        folder = layout.bronze_dir(table)
        if folder.is_dir() and any(folder.glob("*.parquet")):
            views[f"bronze.{table}"] = str(folder.resolve() / "*.parquet")
    return views


def write_views(layout: Layout) -> list[str]:
    """Rebuild `warehouse.duckdb` in a temporary file and swap it in atomically."""
    target = layout.duckdb
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    for stale in (tmp, Path(str(tmp) + ".wal")):
        stale.unlink(missing_ok=True)
    views = view_sources(layout)
    with duckdb.connect(str(tmp)) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS bronze")
        for name, path in views.items():
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({_literal(path)})")
        con.execute("CHECKPOINT")
    os.replace(tmp, target)
    return sorted(views)


def query(layout: Layout, sql: str, params: list | None = None) -> pl.DataFrame:
    with duckdb.connect(str(layout.duckdb), read_only=True) as con:
        relation = con.sql(sql, params=params or None)
        return relation.pl() if relation is not None else pl.DataFrame()
