"""Bronze contracts: one module per source, each with `BRONZE_MODELS`."""

from __future__ import annotations

import importlib

import pandera.polars as pa

from pipelines.config.names import SOURCES


def bronze_models(source: str) -> dict[str, type[pa.DataFrameModel]]:
    return importlib.import_module(f"pipelines.schemas.bronze.{source}").BRONZE_MODELS


def all_bronze_models() -> dict[str, type[pa.DataFrameModel]]:
    """Every bronze table of every source, by table name (names are globally unique)."""
    out: dict[str, type[pa.DataFrameModel]] = {}
    for source in SOURCES:
        for name, model in bronze_models(source).items():
            if name in out:
                raise ValueError(f"bronze table name {name!r} is used twice")
            out[name] = model
    return out
