"""`assets/column_schemas.json`, generated from the Pandera models like the data dictionary.

The Dagster assets show each table's columns (dtype, description, nullability, uniqueness, checks).
Reading them from the models would import Pandera (and through it pandas) whenever the definitions
load, for every command and every step process; the generated file holds the same facts as plain
JSON. `turnlake dictionary` writes it, and a test fails when it is stale against the models.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandera.polars as pa

from pipelines.config.names import SOURCES
from pipelines.schemas.bronze import bronze_models
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS

COLUMN_SCHEMAS_PATH = Path(__file__).resolve().parents[2] / "assets" / "column_schemas.json"


def model_key(model: type) -> str:
    """`module.Class`: how the generated file names a model (no Pandera needed to compute it)."""
    return f"{model.__module__}.{model.__qualname__}"


def _columns(model: type[pa.DataFrameModel]) -> list[dict[str, object]]:
    return [
        {
            "name": name,
            "type": str(column.dtype),
            "description": column.description,
            "nullable": bool(column.nullable),
            "unique": bool(column.unique),
            "rules": [check.name for check in column.checks],
        }
        for name, column in model.to_schema().columns.items()
    ]


def column_schemas() -> dict[str, object]:
    """Columns per model (silver, gold, bronze), and which bronze tables each source has."""
    bronze = {source: bronze_models(source) for source in SOURCES}
    models = [*SILVER_MODELS.values(), *GOLD_MODELS.values()]
    models += [model for tables in bronze.values() for model in tables.values()]
    return {
        "generated_by": "turnlake dictionary (from the Pandera models; do not edit by hand)",
        "models": {model_key(model): _columns(model) for model in models},
        "bronze": {
            source: {table: model_key(model) for table, model in tables.items()}
            for source, tables in bronze.items()
        },
    }


def render_column_schemas() -> str:
    return json.dumps(column_schemas(), indent=1) + "\n"


def write_column_schemas(path: Path = COLUMN_SCHEMAS_PATH) -> Path:
    path.write_text(render_column_schemas(), encoding="utf-8")
    return path
