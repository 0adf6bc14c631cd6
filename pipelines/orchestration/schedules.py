"""The nightly build: cron and time zone come from turnlake.toml ([schedule])."""

from __future__ import annotations

import dagster as dg

from pipelines.config.settings import Settings


def nightly_schedule(
    job: dg.UnresolvedAssetJobDefinition, settings: Settings
) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="nightly_build",
        job=job,
        cron_schedule=settings.schedule_cron,
        execution_timezone=settings.schedule_timezone,
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description="Rebuild every table from the raw root once a night (unchanged raw files are "
        "not re-parsed).",
    )
