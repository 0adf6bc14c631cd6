"""Bronze → silver: the pieces every partition's silver shares (bronze scans, row order, turn
counts, the quarantine's ingest runs) and what silver is a function of; plan.py places the units
in partitions, assemble.py transforms the stale ones a group at a time."""

from __future__ import annotations

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.scores import load_scores, scores_digest
from pipelines.config.settings import Settings
from pipelines.ingest.batches import PARSE_QUARANTINE_SCHEMA, QUARANTINE_PART
from pipelines.ingest.log import read_log, scan_current
from pipelines.partitions.assign import scheme_of
from pipelines.privacy.optouts import OPTOUTS_FILE
from pipelines.schemas import conform, polars_schema, silver_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout

# Deterministic row order, so an unchanged input gives byte-identical tables.
SORT_KEYS: dict[str, list[str]] = {
    "episodes": ["episode_id"],
    "turns": ["episode_id", "turn_index"],
    "feedback": ["feedback_id"],
    "decisions": ["decision_id"],
    "contexts": ["context_hash"],
    "agent_rounds": ["episode_id", "agent_id", "round_number"],
    "quarantine": ["source", "file", "locator", "error_kind", "message"],
    "survey_answers": ["participant_id", "session_id", "section", "question"],
    "policy_states": ["policy_state_id"],
    "replays": ["decision_id", "persona"],
}


def load_bronze(source: str, layout: Layout) -> dict[str, pl.LazyFrame]:
    return {
        table: scan_current(layout, source, table, polars_schema(model))
        for table, model in bronze_models(source).items()
    }


def with_turn_counts(episodes: pl.DataFrame, turns: pl.DataFrame) -> pl.DataFrame:
    counts = turns.group_by("episode_id").agg(pl.len().cast(pl.Int64).alias("_n"))
    return (
        episodes.join(counts, on="episode_id", how="left")
        .with_columns(n_turns=pl.col("_n").fill_null(0))
        .drop("_n")
    )


def stamp_with_ingest_run(frame: pl.LazyFrame, layout: Layout, source: str) -> pl.LazyFrame:
    """A silver rejection names the run that read the rejected record, so an unchanged input
    gives an identical quarantine table on every rebuild."""
    runs = read_log(layout, source).lazy().select("file", pl.col("run_id").alias("_ingest_run"))
    return (
        frame.join(runs, on="file", how="left")
        .with_columns(stage=pl.lit("silver"), run_id=pl.col("_ingest_run"))
        .drop("_ingest_run")
    )


def parse_quarantine(layout: Layout, source: str) -> pl.LazyFrame:
    """The source's parse rejections as silver quarantine rows."""
    scan = scan_current(layout, source, QUARANTINE_PART, PARSE_QUARANTINE_SCHEMA)
    return conform(scan, silver_schema("quarantine"))


INPUTS = stored.INPUTS
WITHHELD = "withheld"  # rows withheld per table for opted-out subjects (counts only)


def transform_scheme(settings: Settings) -> str:
    """What the transforms are a function of besides bronze: their code and settings."""
    config = [
        settings.source_timezones,
        settings.dialogue_turn_index_base,
        settings.decision_rating_scale,
        settings.oasst.model_dump(),
        settings.splits.link_raters,  # dialogue split groups
        settings.splits.near_duplicates.record(),  # silver's near-duplicate clusters
    ]
    # the score configs decide which feedback silver keeps (transforms/scores.py)
    return fingerprint([engine_digest(), json_part(config), scores_digest(load_scores())])


def silver_inputs_digest(settings: Settings) -> str:
    """Everything silver is a function of: the current bronze parts, the transform code,
    settings."""
    layout = Layout(settings.data_root)
    logs = [
        read_log(layout, source)
        .select("file", "file_id", pl.col("missing_since").is_null())
        .sort("file")
        .write_csv()
        for source in SOURCES
    ]
    optouts = settings.raw_root / OPTOUTS_FILE
    # how the tables are laid out: a change rewrites them in the new layout (also the tables an
    # earlier version stored whole: it recorded another layout here)
    layout_scheme = scheme_of(settings.splits, settings.partition_shards)
    return fingerprint(
        [
            *logs,
            transform_scheme(settings),
            optouts.read_bytes() if optouts.exists() else "no opt-outs",
            json_part(layout_scheme),
        ]
    )
