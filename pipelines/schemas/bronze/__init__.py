"""Bronze contracts: one module per source, each with `BRONZE_MODELS`."""

from __future__ import annotations

import importlib

import pandera.polars as pa


def bronze_models(source: str) -> dict[str, type[pa.DataFrameModel]]:
    return importlib.import_module(f"pipelines.schemas.bronze.{source}").BRONZE_MODELS
