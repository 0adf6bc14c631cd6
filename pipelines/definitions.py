"""The single entry point Dagster (`dg dev`, `dg launch`, `dg check defs`) and the CLI load."""

from __future__ import annotations

import dagster as dg

from assets.bronze import BRONZE_ASSETS
from assets.exports import EXPORT_ASSETS
from assets.gold import GOLD_ASSETS
from assets.gold import PARTITION_ASSETS as GOLD_PARTITION_ASSETS
from assets.silver import PARTITION_ASSETS as SILVER_PARTITION_ASSETS
from assets.silver import SILVER_ASSETS
from assets.warehouse import WAREHOUSE_ASSETS
from pipelines.config.settings import Settings, settings_from_env
from pipelines.orchestration.executors import executor_from_env
from pipelines.orchestration.partitions import (
    PARTITION_JOB,
    TURNLAKE_PARTITIONS,
    partition_planner,
)
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.orchestration.run_tags import run_tags
from pipelines.orchestration.schedules import nightly_schedule
from pipelines.orchestration.sensors import raw_files_sensor

BUILD_JOB = "turnlake_build"
ALL_ASSETS = [*BRONZE_ASSETS, *SILVER_ASSETS, *GOLD_ASSETS, *EXPORT_ASSETS, *WAREHOUSE_ASSETS]
PARTITION_ASSETS = [*SILVER_PARTITION_ASSETS, *GOLD_PARTITION_ASSETS]
PARTITION_KEYS = [asset.key for asset in PARTITION_ASSETS]


def build_definitions(
    settings: Settings, executor: dg.ExecutorDefinition | None = None
) -> dg.Definitions:
    """The asset graph, its checks, the build job, schedule and sensor; `executor` None keeps
    Dagster's default (pipelines/orchestration/executors.py)."""
    build_job = dg.define_asset_job(
        BUILD_JOB,
        selection=dg.AssetSelection.all() - dg.AssetSelection.assets(*PARTITION_KEYS),
        description="Raw files → bronze → silver → gold → release → DuckDB views.",
        tags=run_tags(settings),  # runs from the UI, schedule, sensor or `dg launch` too
    )
    partition_job = dg.define_asset_job(
        PARTITION_JOB,
        selection=dg.AssetSelection.assets(*PARTITION_KEYS),
        partitions_def=TURNLAKE_PARTITIONS,
        description="Silver, then gold, of one stale partition (runs planned by "
        "partition_planner; a run may select either).",
        tags=run_tags(settings),
    )
    return dg.Definitions(
        assets=[*ALL_ASSETS, *PARTITION_ASSETS],
        jobs=[build_job, partition_job],
        schedules=[nightly_schedule(build_job, settings)],
        sensors=[raw_files_sensor(build_job), partition_planner(partition_job)],
        resources={"turnlake": TurnlakeResource.from_settings(settings)},
        executor=executor,
    )


def build_job() -> dg.JobDefinition:
    """The build job, rebuilt in every step process of a multiprocess run (the target of
    `dg.reconstructable`: pipelines/orchestration/multiprocess.py)."""
    return build_definitions(settings_from_env()).resolve_job_def(BUILD_JOB)


defs = build_definitions(settings_from_env(), executor_from_env())
