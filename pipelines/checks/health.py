"""Is what is published right now readable and valid? Used by `turnlake status` and the kill
tests."""

from __future__ import annotations

import duckdb
import pandera.polars as pa

from pipelines.config.names import SOURCES
from pipelines.ingest.reconcile import reconcile_source
from pipelines.schemas.integrity import dangling_references
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


def published_problems(layout: Layout) -> list[str]:
    """Everything wrong with the current bronze, silver and views; empty when all is well."""
    problems = _bronze_problems(layout)
    if stored.snapshot(layout, "silver") is None:
        return [*problems, "silver: no published tables"]
    problems += _silver_problems(layout)
    if not layout.duckdb.exists():
        return [*problems, "views: warehouse.duckdb is missing"]
    return problems + _view_problems(layout)


def _bronze_problems(layout: Layout) -> list[str]:
    problems = []
    for source in SOURCES:
        per_file = reconcile_source(source, layout)
        unbalanced = per_file.filter(~per_file["balanced"])
        if unbalanced.height:
            problems.append(f"bronze {source}: {unbalanced.height} files do not reconcile")
    return problems


def _silver_problems(layout: Layout) -> list[str]:
    problems, tables = [], {}
    for table, model in SILVER_MODELS.items():
        try:
            tables[table] = stored.read(layout, "silver", table)
            model.validate(tables[table], lazy=True)
        except (OSError, stored.TableVersionGone, pa.errors.SchemaErrors) as err:
            problems.append(f"silver {table}: {type(err).__name__}: {str(err)[:200]}")
    if len(tables) == len(SILVER_MODELS):
        problems += [
            f"silver reference {k}: {v} dangling" for k, v in dangling_references(tables).items()
        ]
    return problems


def _view_problems(layout: Layout) -> list[str]:
    """A view that does not read back; one connection for all of them (a connection is ~20 ms
    of CPU, a count over a view ~1 ms)."""
    problems = []
    with duckdb.connect(str(layout.duckdb), read_only=True) as con:
        for table in SILVER_MODELS:
            try:
                con.sql(f"SELECT count(*) FROM {table}").fetchall()
            except duckdb.Error as err:
                problems.append(f"view {table}: {str(err)[:200]}")
    return problems
