"""Gold: rewards with provenance, episode outcomes, quality signals, agent-round deltas."""


import dagster as dg

from pipelines.gold import GOLD_TABLES, SILVER_INPUTS, build_gold
from pipelines.gold.params import load_params
from pipelines.io import publish_generation, read_table
from pipelines.layout import Layout
from pipelines.lock import data_root_lock
from pipelines.resources import TurnlakeResource
from pipelines.schemas.gold import GOLD_MODELS

GOLD_KEYS = [dg.AssetKey(f"gold_{table}") for table in GOLD_TABLES]


class GoldConfig(dg.Config):
    """Per-run overrides of rewards.toml, as JSON (or TOML) text, e.g.
    `{"dialogue_feedback": {"rating_map": {"1": 1.0}}, "aggregation": {"method": "median"}}`."""

    overrides: str = ""


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            f"gold_{table}",
            deps=[dg.AssetKey(f"silver_{t}") for t in SILVER_INPUTS],
            group_name="gold",
            kinds={"polars", "parquet"},
            description=(GOLD_MODELS[table].__doc__ or "").strip() or None,
        )
        for table in GOLD_TABLES
    ],
)
def gold_tables(context: dg.AssetExecutionContext, config: GoldConfig, turnlake: TurnlakeResource):
    settings = turnlake.settings()
    layout = Layout(settings.data_root)
    params = load_params(overrides=config.overrides)
    with data_root_lock(settings.data_root):
        silver = {table: read_table(layout.silver(table)) for table in SILVER_INPUTS}
        tables = build_gold(silver, params)
        publish_generation(layout.gold_link, context.run_id, tables)
    enabled = ", ".join(params.get("rules", {}).get("enabled", []))
    for table, frame in tables.items():
        metadata = {"rows": frame.height}
        if table == "turn_rewards":
            metadata["reward_rules"] = enabled
        yield dg.MaterializeResult(asset_key=f"gold_{table}", metadata=metadata)


GOLD_ASSETS = [gold_tables]
