"""Silver: the canonical tables, built together from all bronze data."""

import dagster as dg

from assets.metadata import OWNERS, ROW_COUNT, table_metadata
from pipelines.checks.factory import check_results, check_specs
from pipelines.config.names import SOURCES
from pipelines.orchestration.partitions import TURNLAKE_PARTITIONS
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.runtime.workers import release_idle_workers
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage.lock import DATA_ROOT_POOL, data_root_lock
from pipelines.transforms.partition_run import TRANSFORMED, refresh_partition
from pipelines.transforms.refresh import refresh_silver
from pipelines.transforms.timing import SilverTimes

BRONZE_KEYS = [dg.AssetKey(f"bronze_{source}") for source in SOURCES]


@dg.multi_asset(
    pool=DATA_ROOT_POOL,
    specs=[
        dg.AssetSpec(
            f"silver_{table}",
            deps=BRONZE_KEYS,
            group_name="silver",
            kinds={"polars", "parquet"},
            owners=OWNERS,
            metadata=table_metadata(SILVER_MODELS[table]),
            description=(SILVER_MODELS[table].__doc__ or "").strip() or None,
        )
        for table in SILVER_MODELS
    ],
    check_specs=check_specs("silver"),
)
def silver_tables(context: dg.AssetExecutionContext, turnlake: TurnlakeResource):
    # bronze's parse workers idle on to bridge its steps (~300 MB each after a 1 GB parse);
    # silver parses nothing, and its plan is at its largest in its first seconds
    release_idle_workers()
    settings = turnlake.settings()
    with data_root_lock(settings.layout, wait=settings.lock_wait_seconds):
        times = SilverTimes()
        rows, rebuilt = refresh_silver(settings, context.run_id, times)
    # the closing line: the benchmark reads each source's transform seconds from it
    context.log.info(
        f"silver {'rebuilt' if rebuilt else 'unchanged (bronze, code and settings as before)'}: "
        f"{rows}" + (f"; {times.summary()}" if times.seconds else "")
    )
    # partitions this step transformed itself; those partition runs did are only published
    done = {"partitions_transformed": times.partitions}
    for table, n in rows.items():
        yield dg.MaterializeResult(
            asset_key=f"silver_{table}", metadata={ROW_COUNT: n, "rebuilt": rebuilt, **done}
        )
    # the contracts and `references_resolve` on the tables just published, in this step
    yield from check_results("silver", settings, context.log.debug, context.run.tags)


@dg.asset(
    name="silver_partition",
    partitions_def=TURNLAKE_PARTITIONS,
    deps=BRONZE_KEYS,
    group_name="silver",
    kinds={"polars", "delta"},
    owners=OWNERS,
    description="The silver rows of one partition, transformed from its units' bronze and "
    "committed into the silver tables' partition; `silver_tables` publishes them. Runs are "
    "requested by the partition_planner sensor for stale partitions only.",
)
def silver_partition(
    context: dg.AssetExecutionContext, turnlake: TurnlakeResource
) -> dg.MaterializeResult:
    # no data-root lock: a run writes only its own partition (commits retry on conflict)
    outcome = refresh_partition(turnlake.settings(), context.partition_key)
    context.log.info(f"silver partition {context.partition_key}: {outcome}")
    return dg.MaterializeResult(metadata={"rebuilt": outcome == TRANSFORMED, "outcome": outcome})


SILVER_ASSETS = [silver_tables]
PARTITION_ASSETS = [silver_partition]
