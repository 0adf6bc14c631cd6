"""Gold: rewards with provenance, episode outcomes, quality signals, agent-round deltas; splits."""

import dagster as dg

from assets.metadata import OWNERS, ROW_COUNT, table_metadata
from pipelines.checks.factory import check_results, check_specs
from pipelines.gold import GOLD_TABLES, SILVER_INPUTS
from pipelines.gold.params import load_params
from pipelines.gold.partitions import refresh_partition
from pipelines.gold.refresh import refresh_gold
from pipelines.orchestration.partitions import TURNLAKE_PARTITIONS
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.splits.assign import refresh_splits
from pipelines.storage.layout import Layout
from pipelines.storage.lock import DATA_ROOT_POOL, data_root_lock

GOLD_KEYS = [dg.AssetKey(f"gold_{table}") for table in GOLD_TABLES]


class GoldConfig(dg.Config):
    """Per-run overrides of rewards.toml, as JSON (or TOML) text, e.g.
    `{"dialogue_feedback": {"rating_map": {"1": 1.0}}, "aggregation": {"method": "median"}}`."""

    overrides: str = ""


@dg.multi_asset(
    pool=DATA_ROOT_POOL,
    specs=[
        dg.AssetSpec(
            f"gold_{table}",
            deps=[dg.AssetKey(f"silver_{t}") for t in SILVER_INPUTS],
            group_name="gold",
            kinds={"polars", "parquet"},
            owners=OWNERS,
            metadata=table_metadata(GOLD_MODELS[table]),
            description=(GOLD_MODELS[table].__doc__ or "").strip() or None,
        )
        for table in GOLD_TABLES
    ],
    check_specs=check_specs("gold"),
)
def gold_tables(context: dg.AssetExecutionContext, config: GoldConfig, turnlake: TurnlakeResource):
    settings = turnlake.settings()
    params = load_params(overrides=config.overrides)
    with data_root_lock(settings.layout, wait=settings.lock_wait_seconds):
        rows, rebuilt = refresh_gold(Layout(settings.data_root), params, context.run_id)
    context.log.info(
        f"gold {'rebuilt' if rebuilt else 'unchanged (silver, parameters and code as before)'}: "
        f"{rows}"
    )
    enabled = ", ".join(params.get("rules", {}).get("enabled", []))
    for table, n in rows.items():
        metadata = {ROW_COUNT: n, "rebuilt": rebuilt}
        if table == "turn_rewards":
            metadata["reward_rules"] = enabled
        yield dg.MaterializeResult(asset_key=f"gold_{table}", metadata=metadata)
    # the contracts and `rewards_traceable` on the tables just published, in this step
    yield from check_results("gold", settings, context.log.debug, context.run.tags)


@dg.asset(
    pool=DATA_ROOT_POOL,
    name="gold_splits",
    deps=[dg.AssetKey("silver_episodes")],
    group_name="gold",
    kinds={"polars", "parquet"},
    owners=OWNERS,
    metadata=table_metadata(GOLD_MODELS["splits"]),
    description=(GOLD_MODELS["splits"].__doc__ or "").strip() or None,
    check_specs=check_specs("splits"),
)
def gold_splits(context: dg.AssetExecutionContext, turnlake: TurnlakeResource):
    settings = turnlake.settings()
    config = settings.splits
    with data_root_lock(settings.layout, wait=settings.lock_wait_seconds):
        splits, rebuilt = refresh_splits(Layout(settings.data_root), config, context.run_id)
    counts = dict(splits.group_by("split").len().sort("split").iter_rows())
    yield dg.MaterializeResult(
        metadata={
            ROW_COUNT: splits.height,
            "rebuilt": rebuilt,
            "salt": config.salt,
            "ratios": str(config.ratios),
            **{f"groups_{k}": v for k, v in counts.items()},
        }
    )
    # its contract and `splits_leak_free` (the split proof), in this step
    yield from check_results("splits", settings, context.log.debug, context.run.tags)


@dg.asset(
    name="gold_partition",
    partitions_def=TURNLAKE_PARTITIONS,
    # the same key of silver_partition first (identity mapping: one partitions definition)
    deps=[dg.AssetKey("silver_partition"), *(dg.AssetKey(f"silver_{t}") for t in SILVER_INPUTS)],
    group_name="gold",
    kinds={"polars", "delta"},
    owners=OWNERS,
    description="The gold rows of one silver partition, committed into the gold tables' "
    "partition; `gold_tables` publishes them. Runs are requested by the partition_planner "
    "sensor for stale partitions only.",
)
def gold_partition(
    context: dg.AssetExecutionContext, config: GoldConfig, turnlake: TurnlakeResource
) -> dg.MaterializeResult:
    settings = turnlake.settings()
    params = load_params(overrides=config.overrides)
    # no data-root lock: a run writes only its own partition (commits retry on conflict)
    rebuilt = refresh_partition(Layout(settings.data_root), params, context.partition_key)
    return dg.MaterializeResult(metadata={"rebuilt": rebuilt})


GOLD_ASSETS = [gold_tables, gold_splits]
PARTITION_ASSETS = [gold_partition]
