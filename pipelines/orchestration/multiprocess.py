"""The build job through Dagster's multiprocess executor, on any instance (SQLite, Postgres).

Each step runs in its own process, so the steps cannot share the lock of the process that
started the run the way the in-process `turnlake build` does (a file lock belongs to a process).
Instead the run holds the data root with a lease (`storage.lock.run_lease`) for its whole length:
the lock is taken once, its token is a tag of the run, and each step process joins it (the
`turnlake` resource), so the run's writing steps go on one at a time while any other build waits
or gets `DataRootBusy` (exit 3), also between two of the run's steps.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import dagster as dg

from pipelines.config.settings import Settings
from pipelines.orchestration.executors import multiprocess_run_config
from pipelines.orchestration.resources import RUN_LEASE_TAG
from pipelines.storage.lock import run_lease


def build_run_config(settings: Settings, workers: int, log_level: str = "INFO") -> dict[str, Any]:
    """Run config: the multiprocess executor with `workers` processes, and the roots of
    `settings` as the `turnlake` resource's config (step processes read them from the run, not
    from their environment, so the run records where it wrote)."""
    resource = {
        "raw_root": str(settings.raw_root),
        "data_root": str(settings.data_root),
        "config_path": str(settings.config_path) if settings.config_path else None,
    }
    return {
        **multiprocess_run_config(workers),
        "resources": {"turnlake": {"config": resource}},
        "loggers": {"console": {"config": {"log_level": log_level}}},
    }


def run_build_multiprocess(
    settings: Settings,
    instance: dg.DagsterInstance,
    workers: int,
    wait: float = 0.0,
    log_level: str = "INFO",
    tags: dict[str, str] | None = None,
    *,
    job: Callable[[], dg.JobDefinition],
    lease_token: str | None = None,
) -> dg.JobExecutionResult:
    """Run the build job (`job`: a module-level function returning it, such as
    `pipelines.definitions.build_job`, rebuilt by every step process) with `workers` step
    processes on `instance`, holding the data root's lease (`lease_token`, or a new one) for the
    whole run; raises `DataRootBusy` when another build holds it for longer than `wait` seconds."""
    token = lease_token or uuid.uuid4().hex
    with run_lease(settings.layout, token, wait=wait):
        return dg.execute_job(
            dg.reconstructable(job),
            instance=instance,
            run_config=build_run_config(settings, workers, log_level),
            tags={**(tags or {}), RUN_LEASE_TAG: token},
            raise_on_error=False,
        )
