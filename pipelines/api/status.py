"""`status()`: what the last build left: its run, the raw files since, quarantine, freshness, and
whether every published table reads back."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pipelines.api.results import LastRun, Status
from pipelines.api.roots import PathLike, dagster_home, resolve_settings
from pipelines.config.settings import Settings


def _last_run(home: Path, settings: Settings) -> LastRun | None:
    """The newest run of this data root (its tag); runs of other data roots are not its own."""
    import dagster as dg

    from pipelines.orchestration.instance import open_instance
    from pipelines.orchestration.run_tags import data_root_tag

    def moment(timestamp: float | None) -> datetime | None:
        return datetime.fromtimestamp(timestamp, UTC) if timestamp else None

    with open_instance(home) as instance:
        runs = instance.get_runs(dg.RunsFilter(tags=data_root_tag(settings)), limit=1)
        if not runs:
            return None
        record = instance.get_run_record_by_id(runs[0].run_id)
        return LastRun(
            run_id=runs[0].run_id,
            job_name=runs[0].job_name,
            status=runs[0].status.value,
            started=moment(record.start_time),
            ended=moment(record.end_time),
        )


def status(*, raw_root: PathLike | None = None, data_root: PathLike | None = None) -> Status:
    """The last run, raw files new / changed / missing since the last build, pending tails,
    quarantine by source and error kind, freshness per source, raw files no adapter reads, and
    whether every published table and view reads back (`Status.ok`)."""
    from pipelines.checks.health import published_problems
    from pipelines.reports.status import raw_status
    from pipelines.reports.summary import build_summary
    from pipelines.storage import delta_cache
    from pipelines.storage.layout import Layout

    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    home = dagster_home(settings)
    with delta_cache.reading():  # the ingest logs and tables are read by each part below
        return Status(
            dagster_home=home,
            raw_root=settings.raw_root,
            data_root=settings.data_root,
            last_run=_last_run(home, settings),
            raw=raw_status(settings),
            quarantine=build_summary(settings).quarantine,
            problems=published_problems(Layout(settings.data_root)),
        )
