"""The SQL lens: DuckDB views over every published table and the latest release; then garbage
collection of files no published view reads any more."""

import dagster as dg

from assets.metadata import OWNERS
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.schemas.gold import GOLD_MODELS
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.storage.layout import Layout
from pipelines.storage.lock import DATA_ROOT_POOL, data_root_lock
from pipelines.warehouse.garbage import collect_garbage
from pipelines.warehouse.views import write_views

SILVER_KEYS = [dg.AssetKey(f"silver_{table}") for table in SILVER_MODELS]


@dg.asset(
    pool=DATA_ROOT_POOL,
    name="warehouse_views",
    deps=[
        *SILVER_KEYS,
        *(dg.AssetKey(f"gold_{table}") for table in GOLD_MODELS),
        dg.AssetKey("release"),
    ],
    group_name="warehouse",
    kinds={"duckdb"},
    owners=OWNERS,
    description="`warehouse.duckdb`: one view per silver and gold table (and `bronze.*`) over the "
    "Parquet files.",
)
def warehouse_views(turnlake: TurnlakeResource) -> dg.MaterializeResult:
    settings = turnlake.settings()
    with data_root_lock(settings.layout, wait=settings.lock_wait_seconds):
        views = write_views(Layout(settings.data_root))
        collect_garbage(Layout(settings.data_root), settings.retention_keep_days)
    return dg.MaterializeResult(metadata={"views": ", ".join(views), "n_views": len(views)})


WAREHOUSE_ASSETS = [warehouse_views]
