"""DuckDB as the SQL lens: one view per table over the Parquet files, no data copied."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import polars as pl

from pipelines.config.names import SOURCES
from pipelines.gold.agreement import stored_agreement
from pipelines.ingest.log import current_parts, read_log
from pipelines.release.store.files import latest_release
from pipelines.runtime.faults import crash_point
from pipelines.schemas.bronze import bronze_models
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.files import scan_parquet
from pipelines.storage.layout import Layout


def _literal(text: str) -> str:
    # DDL cannot take bound parameters; paths are the only values spliced in, quoted here.
    return "'" + text.replace("'", "''") + "'"


def view_sources(layout: Layout) -> dict[str, list[str]]:
    """View name → the exact Parquet files it reads, for every table that currently has data.

    Silver and gold views read the files of the table versions in force (Delta), bronze views the
    parts the ingest logs name, so a published view keeps reading the same immutable files until
    views are rebuilt.
    """
    views = {
        table: stored.files(layout, "silver", table)
        for table in SILVER_MODELS
        if stored.exists(layout, "silver", table)
    }
    views |= {
        table: stored.files(layout, "gold", table)
        for table in GOLD_MODELS
        if stored.exists(layout, "gold", table)
    }
    for source in SOURCES:
        log = read_log(layout, source)  # one version of the log for all the source's views
        for table in bronze_models(source):
            parts = [str(p.resolve()) for p in current_parts(layout, source, table, log)]
            if parts:
                views[f"bronze.{table}"] = parts
    views |= _latest_release_views(layout)
    return views


def _latest_release_views(layout: Layout) -> dict[str, list[str]]:
    """`release.<dataset>` over every split file of the newest complete release (older versions:
    `read_parquet('<exports>/<version>/<dataset>/*.parquet')`)."""
    version = latest_release(layout.exports)
    if version is None:
        return {}
    release = layout.release(version).resolve()
    return {
        f"release.{folder.name}": [str(p) for p in sorted(folder.glob("*.parquet"))]
        for folder in sorted(release.iterdir())
        if folder.is_dir() and any(folder.glob("*.parquet"))
    }


def _empty_table(layout: Layout, name: str) -> pl.DataFrame:
    layer = "silver" if name in SILVER_MODELS else "gold"
    return stored.read(layout, layer, name)


def _copy_table(con: duckdb.DuckDBPyConnection, name: str, paths: list[str]) -> None:
    # DuckDB 2.0 here has no httpfs, so it cannot read s3:// itself: under a remote data root
    # the local warehouse holds a copy of each table, read through Polars (object_store).
    con.register("_data", scan_parquet(paths).collect().to_arrow())
    con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _data")
    con.unregister("_data")


def _computed_tables(layout: Layout) -> dict[str, pl.DataFrame]:
    """Small tables computed from the layers rather than read from files: Krippendorff's alpha
    per score name needs the `krippendorff` package, which SQL cannot call."""
    table = stored_agreement(layout)
    return {} if table is None else {"rater_agreement": table}


def write_views(layout: Layout) -> list[str]:
    """Rebuild `warehouse.duckdb` in a temporary file and swap it in atomically (views over
    the Parquet files; for a remote data root, local copies of the tables)."""
    target = layout.duckdb
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    for stale in (tmp, Path(str(tmp) + ".wal")):
        stale.unlink(missing_ok=True)
    views = view_sources(layout)
    with duckdb.connect(str(tmp)) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS bronze")
        con.execute("CREATE SCHEMA IF NOT EXISTS release")
        for name, paths in views.items():
            if not paths:  # an empty Delta table has no file: an empty table of its schema
                con.register("_empty", _empty_table(layout, name).to_arrow())
                con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _empty")
                con.unregister("_empty")
                continue
            if layout.is_remote:
                _copy_table(con, name, paths)
                continue
            files = "[" + ", ".join(_literal(p) for p in paths) + "]"
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({files})")
        computed = _computed_tables(layout)
        for name, frame in computed.items():
            con.register("_data", frame.to_arrow())
            con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _data")
            con.unregister("_data")
        con.execute("CHECKPOINT")
    crash_point("views:before_swap")
    os.replace(tmp, target)
    return sorted([*views, *computed])


def query(layout: Layout, sql: str, params: list | None = None) -> pl.DataFrame:
    with duckdb.connect(str(layout.duckdb), read_only=True) as con:
        relation = con.sql(sql, params=params or None)
        return relation.pl() if relation is not None else pl.DataFrame()
