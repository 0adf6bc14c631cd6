"""Pandera models (the contract in code) and helpers to build frames that satisfy them.

Importing this package imports no Pandera (nor pandas): parse workers type bronze rows with these
helpers and the bronze schemas read from the models' source (bronze_dtypes.py), and never
validate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.schemas.bronze_dtypes import bronze_schemas

if TYPE_CHECKING:
    import pandera.polars as pa


def polars_schema(model: type[pa.DataFrameModel]) -> pl.Schema:
    """The exact Polars schema a model demands, in column order (a fresh copy: callers may
    change it)."""
    return pl.Schema(_model_columns(model))


@cache
def _model_columns(model: type[pa.DataFrameModel]) -> tuple[tuple[str, pl.DataType], ...]:
    # a model's schema is fixed; building it from Pandera each time cost ~0.15 ms, and every
    # partition's transform asks for its tables' schemas again (thousands of calls a build)
    columns = model.to_schema().columns
    return tuple((name, col.dtype.type) for name, col in columns.items())


def silver_schema(table: str) -> pl.Schema:
    from pipelines.schemas.silver import SILVER_MODELS

    return polars_schema(SILVER_MODELS[table])


def conform(frame: pl.DataFrame | pl.LazyFrame, schema: pl.Schema) -> pl.LazyFrame:
    """Select the schema's columns in order, cast to their types, add missing ones as nulls.

    Columns not in the schema are an error: they would be lost silently.
    """
    lf = frame.lazy()
    have = lf.collect_schema()
    extra = [c for c in have.names() if c not in schema]
    if extra:
        raise ValueError(f"columns not in the contract: {extra}")
    return lf.select(
        [
            (pl.col(name) if name in have else pl.lit(None)).cast(dtype).alias(name)
            for name, dtype in schema.items()
        ]
    )


def frame_from_rows(rows: Iterable[Mapping[str, Any]], schema: pl.Schema) -> pl.DataFrame:
    """Rows (dicts; missing keys are null) → a frame with exactly `schema`."""
    return pl.DataFrame(list(rows), schema=schema, orient="row", strict=False)


@cache
def bronze_schema(table: str) -> pl.Schema:
    """A bronze table's exact Polars schema (any source; table names are unique)."""
    for source in SOURCES:
        if table in (schemas := bronze_schemas(source)):
            return schemas[table]
    raise KeyError(f"no bronze table {table!r}")


def bronze_table(bronze: Mapping[str, pl.LazyFrame], table: str) -> pl.LazyFrame:
    """Bronze table `table` of a source's loaded tables, or an empty one of its schema (a table
    the source's files never held, or a caller passing only some tables)."""
    frame = bronze.get(table)
    return frame if frame is not None else pl.LazyFrame(schema=bronze_schema(table))


def bronze_frame(table: str, rows: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Bronze rows of one table (any source) as a frame of its contract's exact schema."""
    return frame_from_rows(rows, bronze_schema(table))


def empty(schema: pl.Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)
