"""`build(workers=N)`: the build job through the multiprocess executor, with progress.

The steps run in processes of their own, so their log records never reach this process's
`turnlake` logger; their events do reach the Dagster instance. A thread follows the run's event
log and turns each record into the same `turnlake.progress` records an in-process build gives
(`progress.translate`), so the CLI shows the same step lines either way.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import TYPE_CHECKING

from pipelines.api.progress import Progress, emit, translate
from pipelines.api.roots import dagster_home

if TYPE_CHECKING:
    import dagster as dg

    from pipelines.config.settings import Settings

POLL_SECONDS = 0.5


def _forward(entry: dg.EventLogEntry, message_level: int) -> None:
    """One event log entry as progress, as `progress._Forward` does for a live log record."""
    record = logging.LogRecord("dagster", entry.level, "", 0, entry.user_message, None, None)
    record.dagster_meta = {  # type: ignore[attr-defined]
        "dagster_event": entry.dagster_event,
        "step_key": entry.step_key,
        "orig_message": entry.user_message,
    }
    translated = translate(record)
    if translated is None:
        return
    progress, level = translated
    if progress.kind != "message" or level >= message_level:
        emit(progress, level)


class RunFollower(threading.Thread):
    """Emits the progress of the run tagged with `lease_token` until `stop()`, then drains."""

    def __init__(self, settings: Settings, lease_token: str, message_level: int) -> None:
        super().__init__(name="turnlake-run-follower", daemon=True)
        self.home = dagster_home(settings)
        self.token = lease_token
        self.message_level = message_level
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)

    def run(self) -> None:
        import dagster as dg

        from pipelines.orchestration.instance import open_instance
        from pipelines.orchestration.resources import RUN_LEASE_TAG

        cursor, run_id = None, None
        with open_instance(self.home) as instance:
            while True:
                last = self.stopping.is_set()  # one more pass after the run ended: drain
                if run_id is None:
                    runs = instance.get_runs(
                        dg.RunsFilter(tags={RUN_LEASE_TAG: self.token}), limit=1
                    )
                    run_id = runs[0].run_id if runs else None
                if run_id is not None:
                    cursor = self._follow(instance, run_id, cursor)
                if last:
                    return
                self.stopping.wait(POLL_SECONDS)

    def _follow(self, instance: dg.DagsterInstance, run_id: str, cursor: str | None) -> str:
        while True:
            page = instance.get_records_for_run(run_id, cursor=cursor, limit=500)
            for record in page.records:
                _forward(record.event_log_entry, self.message_level)
            cursor = page.cursor
            if not page.has_more:
                return cursor


def run_with_workers(
    settings: Settings, workers: int, wait: float, log_level: str, tags: dict[str, str]
) -> dg.JobExecutionResult:
    """The build job with `workers` step processes, holding the data root's lease for the run."""

    from pipelines.definitions import build_job
    from pipelines.orchestration.instance import open_instance
    from pipelines.orchestration.multiprocess import run_build_multiprocess

    token = uuid.uuid4().hex
    steps = len(build_job().graph.nodes)
    emit(Progress("plan", total=steps, text=f"build: {steps} steps, {workers} worker processes"))
    follower = RunFollower(settings, token, logging.getLevelName(log_level.upper()))
    # Opened (its storage created on first use) before the follower opens it too: two first
    # openings at once race to create the same SQLite schema.
    with open_instance(dagster_home(settings)) as instance:
        instance.get_runs(limit=1)
        follower.start()
        try:
            # The steps' own console output would interleave with the progress lines; their
            # messages reach the follower through the event log.
            return run_build_multiprocess(
                settings,
                instance,
                workers,
                wait,
                "CRITICAL",
                tags,
                job=build_job,
                lease_token=token,
            )
        finally:
            follower.stop()
