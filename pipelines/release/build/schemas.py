"""The columns of every dataset a release can hold, as the dataset builders make them from empty
tables of the contract's exact types. A dataset (or split) without rows is written with these,
so a release always has the same configs, files and columns whatever its data held (staged.py):
the schema is derived from the builders, never kept by hand beside them."""

from __future__ import annotations

from functools import cache

import polars as pl

from pipelines.exports.datasets import build_datasets
from pipelines.release.build.order import survey_dataset
from pipelines.schemas import empty, polars_schema
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS


@cache
def dataset_schemas() -> dict[str, pl.Schema]:
    """Dataset name → its released schema (`surveys` too: written only when configured)."""
    silver = {table: empty(polars_schema(model)) for table, model in SILVER_MODELS.items()}
    gold = {table: empty(polars_schema(model)) for table, model in GOLD_MODELS.items()}
    built = build_datasets(silver, gold, gold["splits"])
    built["surveys"] = survey_dataset(silver["survey_answers"], gold["splits"])
    return {name: frame.schema for name, frame in built.items()}


def configured_splits(ratios: dict[str, float], order: tuple[str, ...]) -> tuple[str, ...]:
    """The splits every dataset of a release has a file of: those with a ratio above 0, in
    `order` (a split a script loads by name is there even when no group fell into it)."""
    return tuple(split for split in order if ratios.get(split, 0) > 0)
