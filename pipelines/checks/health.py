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
from pipelines.warehouse.views import query


def published_problems(layout: Layout) -> list[str]:
    """Everything wrong with the current bronze, silver and views; empty when all is well."""
    problems = []
    for source in SOURCES:
        per_file = reconcile_source(source, layout)
        unbalanced = per_file.filter(~per_file["balanced"])
        if unbalanced.height:
            problems.append(f"bronze {source}: {unbalanced.height} files do not reconcile")
    if stored.snapshot(layout, "silver") is None:
        return [*problems, "silver: no published tables"]
    tables = {}
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
    if not layout.duckdb.exists():
        return [*problems, "views: warehouse.duckdb is missing"]
    for table in SILVER_MODELS:
        try:
            query(layout, f"SELECT count(*) FROM {table}")
        except duckdb.Error as err:
            problems.append(f"view {table}: {str(err)[:200]}")
    return problems
