"""Bronze: one asset per source; each raw file becomes typed bronze rows or quarantine rows."""

import dagster as dg

from assets.metadata import COLUMN_SCHEMA, OWNERS, ROW_COUNT, bronze_column_schema
from pipelines.checks.factory import check_results, check_specs
from pipelines.config.names import SOURCES
from pipelines.ingest.incremental import ingest_source, parsing_message
from pipelines.orchestration.resources import TurnlakeResource
from pipelines.storage.lock import DATA_ROOT_POOL, data_root_lock


def bronze_asset(source: str) -> dg.AssetsDefinition:
    @dg.asset(
        pool=DATA_ROOT_POOL,
        name=f"bronze_{source}",
        group_name="bronze",
        kinds={"polars", "parquet"},
        owners=OWNERS,
        metadata={COLUMN_SCHEMA: bronze_column_schema(source)},
        check_specs=check_specs(f"bronze_{source}"),
        description=f"Raw `{source}` files parsed into typed bronze parts (one per raw file); "
        "unchanged files are reused, bad records quarantined.",
    )
    def _bronze(context: dg.AssetExecutionContext, turnlake: TurnlakeResource):
        settings = turnlake.settings()
        with data_root_lock(settings.layout, wait=settings.lock_wait_seconds):
            report = ingest_source(
                source,
                settings,
                context.run_id,
                lambda done, total: context.log.debug(parsing_message(source, done, total)),
            )
        context.log.info(
            f"{source}: {report.files_seen} files ({report.files_parsed} parsed, "
            f"{report.files_appended} of them by their new tail only, "
            f"{report.files_reused} unchanged), "
            f"{report.records_read} records → {report.n_bronze} bronze, {report.n_quarantine} "
            "quarantined, "
            f"{report.n_pending} pending"
        )
        yield dg.MaterializeResult(
            metadata={
                ROW_COUNT: report.n_bronze,
                "files_seen": report.files_seen,
                "files_parsed": report.files_parsed,
                "files_reused": report.files_reused,
                "files_appended": report.files_appended,
                "files_missing": len(report.files_missing),
                "files_removed": len(report.files_removed),
                "records_read": report.records_read,
                "bronze_rows": report.n_bronze,
                "quarantined": report.n_quarantine,
                "pending_tails": report.n_pending,
            }
        )
        # its contracts and `nothing_lost` on the parts just written, in this step (factory.py)
        yield from check_results(f"bronze_{source}", settings, context.log.debug, context.run.tags)

    return _bronze


BRONZE_ASSETS = [bronze_asset(source) for source in SOURCES]
