"""`report()`: the HTML build report of the current data root (every build also writes one)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.api.roots import PathLike, dagster_home, resolve_settings
from pipelines.config.settings import Settings

if TYPE_CHECKING:
    import dagster as dg

    from pipelines.reports.numbers import CheckResult
    from pipelines.reports.summary import BuildSummary

log = logging.getLogger("turnlake")

BUILD_JOB_NAME = "turnlake_build"


def check_results(evaluations: list[dg.AssetCheckEvaluation]) -> list[CheckResult]:
    """The report's view of a run's asset check evaluations."""
    import dagster as dg

    from pipelines.reports.numbers import CheckResult

    return [
        CheckResult(
            asset=e.asset_key.to_user_string(),
            check=e.check_name,
            passed=e.passed,
            blocking=e.severity == dg.AssetCheckSeverity.ERROR,
            description=e.description,
        )
        for e in evaluations
    ]


def _last_build_checks(settings: Settings) -> tuple[str, datetime, list[CheckResult]] | None:
    """Run id, start time and check results of this data root's last build in the instance."""
    import dagster as dg

    from pipelines.orchestration.instance import open_instance
    from pipelines.orchestration.run_tags import data_root_tag

    with open_instance(dagster_home(settings)) as instance:
        runs_filter = dg.RunsFilter(job_name=BUILD_JOB_NAME, tags=data_root_tag(settings))
        runs = instance.get_runs(runs_filter, limit=1)
        if not runs:
            return None
        run_id = runs[0].run_id
        record = instance.get_run_record_by_id(run_id)
        started = datetime.fromtimestamp(record.start_time or record.create_timestamp.timestamp())
        events = instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
        ).records
        evaluations = [e.event_log_entry.dagster_event.event_specific_data for e in events]
        return run_id, started.astimezone(UTC), check_results(evaluations)


def write_build_report(
    settings: Settings,
    summary: BuildSummary,
    run_id: str,
    run_time: datetime,
    checks: list[CheckResult] | None,
) -> Path:
    """Gather, render and write the report of one run; returns its path."""
    from pipelines.reports.page import gather_sections, render_report, write_report
    from pipelines.storage.layout import Layout

    layout = Layout(settings.data_root)
    sections = gather_sections(layout, summary, checks)
    subtitle = (
        f"run {run_id} at {run_time:%Y-%m-%d %H:%M:%S} UTC · data root {settings.data_root} · "
        f"raw root {settings.raw_root}"
    )
    html = render_report(sections, "turnlake build report", subtitle)
    path = write_report(layout, html, run_time, run_id)
    log.debug("report: %s", path)
    return path


def report(*, raw_root: PathLike | None = None, data_root: PathLike | None = None) -> Path:
    """Write the HTML build report of the data root as it is now, with the check results of the
    last build recorded in the Dagster instance; returns its path (also `reports/latest.html`).

    Raises `NotBuilt` when nothing was built under the data root yet.
    """
    from pipelines.api.errors import NotBuilt
    from pipelines.reports.summary import build_summary
    from pipelines.storage import tables as stored
    from pipelines.storage.layout import Layout

    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    if stored.snapshot(Layout(settings.data_root), "silver") is None:
        raise NotBuilt(f"nothing built under {settings.data_root}: run `turnlake build` first")
    last = _last_build_checks(settings)
    run_id, run_time, checks = last if last else ("no-run", datetime.now(UTC), None)
    return write_build_report(settings, build_summary(settings), run_id, run_time, checks)
