"""Bronze → silver: run every source's transform and assemble the canonical tables."""

from __future__ import annotations

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.ingest.batches import PARSE_QUARANTINE_SCHEMA, QUARANTINE_PART
from pipelines.ingest.log import read_log, scan_current
from pipelines.partitions.assign import assign_partitions, scheme_of, with_episodes
from pipelines.partitions.rows import SILVER_KEYS, placement
from pipelines.partitions.store import (
    BOOKKEEPING,
    MAP_TABLE,
    frames_to_write,
    previous_digests,
    previous_map,
)
from pipelines.privacy.optouts import OPTOUTS_FILE, load_optouts, withhold
from pipelines.runtime.faults import crash_point
from pipelines.schemas import conform, polars_schema, silver_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.sources.base import dumps
from pipelines.splits.assign import assign_splits
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout
from pipelines.transforms.raw_inputs import RAW_INPUTS, current_raw_inputs
from pipelines.transforms.timing import SilverTimes
from pipelines.transforms.unit_cache import cached_silver

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


def source_silver(source: str, settings: Settings) -> dict[str, pl.LazyFrame]:
    """One source's contribution to each silver table, conformed to the contract; only the
    chunks whose bronze changed are transformed again (unit_cache.py)."""
    layout = Layout(settings.data_root)
    files = read_log(layout, source).filter(pl.col("missing_since").is_null())
    return cached_silver(
        source,
        load_bronze(source, layout),
        settings,
        files.select("file", "file_id"),
        transform_scheme(settings),
    )


def sources_silver(
    settings: Settings, times: SilverTimes | None = None
) -> dict[str, dict[str, pl.LazyFrame]]:
    """`source_silver` of every source; each timed and counted into `times` when given."""
    if times is None:
        return {source: source_silver(source, settings) for source in SOURCES}
    return times.run(list(SOURCES), lambda source: source_silver(source, settings))


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


def build_silver(
    settings: Settings, times: SilverTimes | None = None
) -> tuple[dict[str, pl.DataFrame], dict[str, int]]:
    """All silver tables, in memory, sorted; quarantine = parse rejections + silver rejections.
    Rows about subjects in the raw root's opt-out registry are withheld (counts returned, no
    ids)."""
    layout = Layout(settings.data_root)
    pieces: dict[str, list[pl.LazyFrame]] = {table: [] for table in SILVER_MODELS}
    for source, frames in sources_silver(settings, times).items():
        for table, frame in frames.items():
            if table == "quarantine":
                frame = stamp_with_ingest_run(frame, layout, source)
            pieces[table].append(frame)
    pieces["quarantine"] += [parse_quarantine(layout, source) for source in SOURCES]
    tables = {}
    for table, frames in pieces.items():
        schema = silver_schema(table)
        frame = pl.concat(frames).collect() if frames else pl.DataFrame(schema=schema)
        tables[table] = frame
    tables["episodes"] = with_turn_counts(tables["episodes"], tables["turns"])
    tables, withheld = withhold(tables, load_optouts(settings.raw_root)[0])
    # Content-addressed: the same blob from two places is one row.
    tables["contexts"] = tables["contexts"].unique(subset="context_hash", keep="first")
    return {
        table: frame.sort(SORT_KEYS[table], nulls_last=True) for table, frame in tables.items()
    }, withheld


INPUTS = stored.INPUTS
WITHHELD = "withheld"  # rows withheld per table for opted-out subjects (counts only)


def transform_scheme(settings: Settings) -> str:
    """What the transforms are a function of besides bronze: their code and settings."""
    config = [
        settings.source_timezones,
        settings.dialogue_turn_index_base,
        settings.default_turn_index_base,
        settings.decision_rating_scale,
        settings.oasst.model_dump(),
        settings.splits.link_raters,  # dialogue split groups
    ]
    return fingerprint([engine_digest(), json_part(config)])


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
    # how the tables are laid out: a change rewrites them in the new layout
    layout_scheme = (
        scheme_of(settings.splits, settings.partition_shards) if settings.partition_shards else 0
    )
    return fingerprint(
        [
            *logs,
            transform_scheme(settings),
            optouts.read_bytes() if optouts.exists() else "no opt-outs",
            json_part(layout_scheme),
        ]
    )


def publish_silver(
    layout: Layout,
    run_id: str,
    tables: dict[str, pl.DataFrame],
    inputs: str = "",
    withheld: dict[str, int] | None = None,
    settings: Settings | None = None,
) -> stored.Snapshot:
    """Make a complete set of silver tables current in one atomic step. Tables of episodes are
    stored in partitions (pipelines/partitions/); only partitions whose rows changed are
    rewritten."""
    settings = settings or Settings(data_root=layout.data_root)
    crash_point("silver:before_publish")
    meta = {stored.RUN: run_id, INPUTS: inputs, WITHHELD: dumps(withheld or {})}
    raw_inputs = current_raw_inputs(layout)
    if settings.partition_shards == 0:  # whole tables: no partition bookkeeping stays behind
        whole = {**tables, RAW_INPUTS: raw_inputs}
        snapshot = stored.publish(layout, "silver", whole, meta, drop=BOOKKEEPING)
        crash_point("silver:after_publish")
        return snapshot
    splits = assign_splits(tables["episodes"].get_column("group_id"), settings.splits)
    partition_map = assign_partitions(
        with_episodes(splits, tables["episodes"]),
        previous_map(layout),
        settings.splits,
        settings.partition_shards,
        settings.partition_episodes,
    )
    frames, partitions, _, _ = frames_to_write(
        tables,
        SILVER_KEYS,
        placement(tables["episodes"], partition_map),
        previous_digests(layout, "silver"),
    )
    frames[MAP_TABLE] = partition_map
    frames[RAW_INPUTS] = raw_inputs
    # no provenance: the next assembly (assemble.py) does not trust these tables' history
    stale = [t for t in BOOKKEEPING if t not in frames]
    snapshot = stored.publish(layout, "silver", frames, meta, partitions=partitions, drop=stale)
    crash_point("silver:after_publish")
    return snapshot
