"""The plan of silver partition runs, made once by the planner and committed for the runs to read.

Which units a partition holds, and its input digest, is known only from the whole of bronze's
unit keys (plan.py), so planning costs as much for one partition as for all. The planner (the
`partition_planner` sensor, `wanted_runs`) plans once and commits the result to the data root
(`Layout.partition_plan`, one Parquet file written atomically): per partition its input digest,
and for each stale partition its units with their bronze rows and the files holding them. Each
partition run then reads only its own rows of that file.

A committed plan is used only while it is the plan a run would make now. It names what it was
made from (`basis`): the engine, silver's scheme (code, settings, opt-out registry, partition
layout) and the placement settings, the version of every source's ingest log (which parts are
bronze: parts are never rewritten in place) and silver's published snapshot (the partition map
and the near-duplicate signatures placement starts from). A run whose basis differs plans again
from bronze itself, as before this file existed: slower, never wrong. Staleness is not taken
from the plan but decided by the run against silver's record as committed then (another run or a
build may have done the partition since).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.store import INPUTS
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.engine import engine_digest
from pipelines.storage.files import scan_parquet, write_parquet_atomic
from pipelines.storage.fingerprint import fingerprint, json_part
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options
from pipelines.transforms.plan import Plan, silver_scheme

BASIS = "basis"
PLAN_SCHEMA = pl.Schema(
    {
        PARTITION: pl.String,
        INPUTS: pl.String,  # the partition's input digest when planned
        "source": pl.String,  # null on the one row of a partition that was not stale
        "unit": pl.String,
        "rows": pl.Int64,  # the unit's bronze rows
        "files": pl.List(pl.String),  # the raw files holding the unit's bronze rows
        BASIS: pl.String,
    }
)


def plan_basis(settings: Settings) -> str:
    """What a plan is a function of besides the record (module docstring): cheap to compute,
    every table's version read, not its rows."""
    layout = Layout(settings.data_root)
    options = storage_options(layout.data_root)
    logs = {}
    for source in SOURCES:
        log = delta_cache.latest(str(layout.ingest_log(source)), options)
        logs[source] = None if log is None else log.version()
    published = stored.snapshot(layout, "silver")
    return fingerprint(
        [
            engine_digest(),
            silver_scheme(settings),
            # placement: what scheme_of leaves out (a batch's size target) counts for a plan
            json_part(
                [
                    settings.splits.record(),
                    settings.splits.link_raters,
                    settings.partition_shards,
                    settings.partition_episodes,
                ]
            ),
            json_part(logs),
            json_part(None if published is None else published.record()),
        ]
    )


def plan_frame(plan: Plan, basis: str) -> pl.DataFrame:
    """The committed plan (PLAN_SCHEMA): every partition's input digest, and the units (with
    their rows and files) of each stale one."""
    stale = pl.Series(plan.stale, dtype=pl.String).implode()
    files = pl.concat(
        [
            units.unit_files.select("unit", "file", source=pl.lit(source))
            for source, units in plan.sources.items()
        ]
    )
    mine = plan.units.filter(pl.col(PARTITION).is_in(stale))
    units = (
        mine.join(
            files.group_by("source", "unit").agg(files=pl.col("file").sort()),
            on=["source", "unit"],
            how="left",
        )
        .join(plan.digests, on=PARTITION)
        .with_columns(pl.col("files").fill_null([]))
    )
    others = plan.digests.filter(~pl.col(PARTITION).is_in(stale))
    frame = pl.concat([units, others], how="diagonal_relaxed")
    return (
        frame.with_columns(pl.lit(basis, pl.String).alias(BASIS))
        .select(PLAN_SCHEMA.names())
        .cast(PLAN_SCHEMA)
        .sort(PARTITION, "source", "unit", nulls_last=True)
    )


def commit_plan(settings: Settings, plan: Plan) -> None:
    """Commit `plan` for the partition runs (replacing the one before: one PUT or rename)."""
    layout = Layout(settings.data_root)
    write_parquet_atomic(plan_frame(plan, plan_basis(settings)), layout.partition_plan)


@dataclass(frozen=True)
class PartitionPlan:
    """One partition's slice of the committed plan."""

    inputs: str  # its input digest
    units: pl.DataFrame  # source, unit, rows, files; empty when it was not stale when planned


def committed_slice(settings: Settings, key: str) -> PartitionPlan | None:
    """Partition `key`'s slice of the committed plan, when there is one made from what bronze,
    code, settings and published silver are now; else None (plan again)."""
    layout = Layout(settings.data_root)
    path = layout.partition_plan
    if not path.exists():
        return None
    scan = scan_parquet(path)
    if scan.collect_schema() != PLAN_SCHEMA:
        return None  # written by another version
    rows = scan.filter(pl.col(PARTITION) == key).collect()
    if rows.is_empty():
        return None  # a partition the plan does not know
    if rows.get_column(BASIS).unique().to_list() != [plan_basis(settings)]:
        return None
    units = rows.filter(pl.col("source").is_not_null()).select("source", "unit", "rows", "files")
    return PartitionPlan(rows.get_column(INPUTS)[0], units)
