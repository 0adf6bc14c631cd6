"""Bronze → silver: run every source's transform and assemble the canonical tables."""

from __future__ import annotations

import importlib

import polars as pl

from pipelines.config import SOURCES, Settings
from pipelines.ingest import PARSE_QUARANTINE_SCHEMA
from pipelines.io import scan_parts
from pipelines.layout import Layout
from pipelines.schemas import conform, polars_schema, silver_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.schemas.silver import SILVER_MODELS

# Deterministic row order, so an unchanged input gives byte-identical tables.
SORT_KEYS: dict[str, list[str]] = {
    "episodes": ["episode_id"],
    "turns": ["episode_id", "turn_index"],
    "feedback": ["feedback_id"],
    "decisions": ["decision_id"],
    "contexts": ["context_hash"],
    "agent_rounds": ["episode_id", "agent_id", "round_number"],
    "quarantine": ["source", "file", "locator", "error_kind", "message"],
}


def load_bronze(source: str, layout: Layout) -> dict[str, pl.LazyFrame]:
    return {
        table: scan_parts(layout.bronze_dir(table), polars_schema(model))
        for table, model in bronze_models(source).items()
    }


def source_silver(source: str, settings: Settings) -> dict[str, pl.LazyFrame]:
    """One source's contribution to each silver table, conformed to the contract."""
    transform = importlib.import_module(f"pipelines.transforms.{source}")
    produced = transform.to_silver(load_bronze(source, Layout(settings.data_root)), settings)
    unknown = set(produced) - set(SILVER_MODELS)
    if unknown:
        raise ValueError(f"{source} transform produced unknown tables: {sorted(unknown)}")
    return {table: conform(frame, silver_schema(table)) for table, frame in produced.items()}


def _with_turn_counts(episodes: pl.DataFrame, turns: pl.DataFrame) -> pl.DataFrame:
    counts = turns.group_by("episode_id").agg(pl.len().cast(pl.Int64).alias("_n"))
    return (
        episodes.join(counts, on="episode_id", how="left")
        .with_columns(n_turns=pl.col("_n").fill_null(0))
        .drop("_n")
    )


def build_silver(settings: Settings, run_id: str | None) -> dict[str, pl.DataFrame]:
    """All silver tables, in memory, sorted; quarantine = parse rejections + silver rejections."""
    layout = Layout(settings.data_root)
    pieces: dict[str, list[pl.LazyFrame]] = {table: [] for table in SILVER_MODELS}
    for source in SOURCES:
        for table, frame in source_silver(source, settings).items():
            if table == "quarantine":
                frame = frame.with_columns(stage=pl.lit("silver"), run_id=pl.lit(run_id, pl.String))
            pieces[table].append(frame)
    for source in SOURCES:
        pieces["quarantine"].append(
            conform(scan_parts(layout.parse_quarantine_dir(source), PARSE_QUARANTINE_SCHEMA),
                    silver_schema("quarantine"))
        )
    tables = {}
    for table, frames in pieces.items():
        schema = silver_schema(table)
        frame = pl.concat(frames).collect() if frames else pl.DataFrame(schema=schema)
        tables[table] = frame
    tables["episodes"] = _with_turn_counts(tables["episodes"], tables["turns"])
    # Content-addressed: the same blob from two places is one row.
    tables["contexts"] = tables["contexts"].unique(subset="context_hash", keep="first")
    return {table: frame.sort(SORT_KEYS[table], nulls_last=True) for table, frame in tables.items()}
