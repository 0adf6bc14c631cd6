"""Shared helpers for the gold unit tests: tiny silver frames and fixture → silver in-process."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.config.settings import Settings, settings_from_config
from pipelines.gold.params import load_params
from pipelines.schemas import conform, silver_schema
from pipelines.transforms.units import transform
from tests.unit._locality import fixture_bronze

PROJECT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT / "tests" / "fixtures"


def silver_frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """Rows (missing keys null) → a frame with exactly the silver table's schema."""
    schema = silver_schema(table)
    if not rows:
        return pl.DataFrame(schema=schema)
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return conform(pl.DataFrame(rows, schema={k: schema[k] for k in keys}), schema).collect()


def silver_tables(**tables: list[dict]) -> dict[str, pl.DataFrame]:
    names = ("episodes", "turns", "feedback", "decisions", "agent_rounds")
    return {name: silver_frame(name, tables.get(name, [])) for name in names}


def params(**overrides) -> dict:
    return load_params(PROJECT / "rewards.toml", overrides)


def source_silver(source: str, raw_root: Path) -> dict[str, pl.DataFrame]:
    """Run one source's real adapter and transform over a fixture folder (no Dagster)."""
    settings: Settings = settings_from_config(
        raw_root, raw_root / "_unused", PROJECT / "turnlake.toml"
    )
    out = transform(source, fixture_bronze(source, raw_root, settings), settings)
    for table in ("episodes", "turns", "feedback", "decisions", "agent_rounds", "quarantine"):
        out.setdefault(table, pl.DataFrame(schema=silver_schema(table)))
    return out
