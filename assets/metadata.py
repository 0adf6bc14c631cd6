"""What the Dagster UI shows about an asset: column schemas taken from the Pandera models (the
same descriptions as docs/data_dictionary.md), row counts under Dagster's own keys, owners, and
the release's rows per dataset and split with its dataset card."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandera.polars as pa

from pipelines.release.files import CARD, read_manifest
from pipelines.schemas.bronze import bronze_models

OWNERS = ["team:turnlake"]
COLUMN_SCHEMA = "dagster/column_schema"
ROW_COUNT = "dagster/row_count"


def _rules(column: pa.Column) -> list[str]:
    return [check.name for check in column.checks]


def _columns(model: type[pa.DataFrameModel], prefix: str = "") -> list[dg.TableColumn]:
    return [
        dg.TableColumn(
            name=f"{prefix}{name}",
            type=str(column.dtype),
            description=column.description,
            constraints=dg.TableColumnConstraints(
                nullable=bool(column.nullable), unique=bool(column.unique), other=_rules(column)
            ),
        )
        for name, column in model.to_schema().columns.items()
    ]


def column_schema(model: type[pa.DataFrameModel]) -> dg.TableSchema:
    """The model's columns with their dtype, description, nullability, uniqueness and checks."""
    return dg.TableSchema(columns=_columns(model))


def bronze_column_schema(source: str) -> dg.TableSchema:
    """A source's bronze asset holds several tables when its raw files hold several record
    kinds; Dagster shows one schema per asset, so columns are named `<table>.<column>`."""
    models = bronze_models(source)
    if len(models) == 1:
        return column_schema(next(iter(models.values())))
    return dg.TableSchema(
        columns=[c for table, model in models.items() for c in _columns(model, f"{table}.")]
    )


def table_metadata(model: type[pa.DataFrameModel]) -> dict[str, object]:
    """Definition metadata of a table asset (shown before anything is materialized)."""
    return {COLUMN_SCHEMA: column_schema(model)}


def release_metadata(release: Path) -> dict[str, object]:
    """Rows per dataset and split (`rows/<dataset>/<split>`, from the manifest), the total as
    `dagster/row_count`, and the dataset card as markdown."""
    counts = read_manifest(release)["counts"]
    rows = {
        f"rows/{dataset}/{split}": n
        for dataset, splits in sorted(counts.items())
        for split, n in sorted(splits.items())
    }
    return {
        ROW_COUNT: sum(rows.values()),
        **rows,
        "dataset_card": dg.MetadataValue.md((release / CARD).read_text(encoding="utf-8")),
    }
