"""Bronze → silver: run every source's transform and assemble the canonical tables."""

from __future__ import annotations

import importlib

import polars as pl

from pipelines.config import SOURCES, Settings
from pipelines.faults import crash_point
from pipelines.ingest import PARSE_QUARANTINE_SCHEMA, QUARANTINE_PART, read_log, scan_current
from pipelines.io import publish_generation
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
        table: scan_current(layout, source, table, polars_schema(model))
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


def _stamp_with_ingest_run(frame: pl.LazyFrame, layout: Layout, source: str) -> pl.LazyFrame:
    """A silver rejection names the run that read the rejected record, so an unchanged input
    gives an identical quarantine table on every rebuild."""
    runs = read_log(layout, source).lazy().select("file", pl.col("run_id").alias("_ingest_run"))
    return (
        frame.join(runs, on="file", how="left")
        .with_columns(stage=pl.lit("silver"), run_id=pl.col("_ingest_run"))
        .drop("_ingest_run")
    )


def build_silver(settings: Settings) -> dict[str, pl.DataFrame]:
    """All silver tables, in memory, sorted; quarantine = parse rejections + silver rejections."""
    layout = Layout(settings.data_root)
    pieces: dict[str, list[pl.LazyFrame]] = {table: [] for table in SILVER_MODELS}
    for source in SOURCES:
        for table, frame in source_silver(source, settings).items():
            if table == "quarantine":
                frame = _stamp_with_ingest_run(frame, layout, source)
            pieces[table].append(frame)
    for source in SOURCES:
        pieces["quarantine"].append(
            conform(scan_current(layout, source, QUARANTINE_PART, PARSE_QUARANTINE_SCHEMA),
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


def publish_silver(layout: Layout, generation: str, tables: dict[str, pl.DataFrame]) -> None:
    """Make a complete set of silver tables current in one atomic step."""
    crash_point("silver:before_publish")
    publish_generation(layout.silver_link, generation, tables)
    crash_point("silver:after_publish")
