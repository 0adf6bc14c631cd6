"""What the Dagster UI shows about an asset: column schemas (the same facts as
docs/data_dictionary.md), row counts under Dagster's own keys, owners, and the release's rows per
dataset and split with its dataset card.

The column schemas come from `assets/column_schemas.json`, generated from the Pandera models by
`turnlake dictionary` (tests/test_dictionary.py fails when it is stale), so loading the definitions
does not import Pandera here: that import (with pandas) cost ~1 s of every command's start-up.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import dagster as dg

from pipelines.release.store.files import CARD, read_manifest

OWNERS = ["team:turnlake"]
COLUMN_SCHEMA = "dagster/column_schema"
ROW_COUNT = "dagster/row_count"
COLUMN_SCHEMAS = Path(__file__).with_name("column_schemas.json")


class StaleColumnSchemas(LookupError):
    """A model or source that `assets/column_schemas.json` does not know."""


@cache
def _generated() -> dict:
    return json.loads(COLUMN_SCHEMAS.read_text(encoding="utf-8"))


def _lookup(part: str, key: str) -> object:
    try:
        return _generated()[part][key]
    except KeyError:
        raise StaleColumnSchemas(
            f"{COLUMN_SCHEMAS.name} has no {key!r}: regenerate it with `uv run turnlake dictionary`"
        ) from None


def _columns(model_key: str, prefix: str = "") -> list[dg.TableColumn]:
    return [
        dg.TableColumn(
            name=f"{prefix}{column['name']}",
            type=column["type"],
            description=column["description"],
            constraints=dg.TableColumnConstraints(
                nullable=column["nullable"], unique=column["unique"], other=column["rules"]
            ),
        )
        for column in _lookup("models", model_key)
    ]


def column_schema(model: type) -> dg.TableSchema:
    """The model's columns with their dtype, description, nullability, uniqueness and checks."""
    return dg.TableSchema(columns=_columns(f"{model.__module__}.{model.__qualname__}"))


def bronze_column_schema(source: str) -> dg.TableSchema:
    """A source's bronze asset holds several tables when its raw files hold several record
    kinds; Dagster shows one schema per asset, so columns are named `<table>.<column>`."""
    tables: dict[str, str] = _lookup("bronze", source)
    if len(tables) == 1:
        return dg.TableSchema(columns=_columns(next(iter(tables.values()))))
    return dg.TableSchema(
        columns=[c for table, key in tables.items() for c in _columns(key, f"{table}.")]
    )


def table_metadata(model: type) -> dict[str, object]:
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
