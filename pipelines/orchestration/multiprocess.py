"""The build job through Dagster's multiprocess executor, on any instance (SQLite, Postgres).

Each step runs in its own process, so the build's own process cannot hold the data-root lock
for the whole run the way the in-process `turnlake build` does (the lock belongs to a process and
the steps would wait for their parent). Instead every writing step takes the lock itself and
waits for it (`[lock] wait_seconds`); before starting, the run checks that no other build holds
the data root, so a busy root is reported at once (`DataRootBusy`, exit 3) as for the CLI.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from pipelines.config.settings import Settings, settings_from_env
from pipelines.orchestration.executors import multiprocess_run_config
from pipelines.storage.lock import data_root_lock


def build_job() -> dg.JobDefinition:
    """The build job, rebuilt in every step process (the target of `dg.reconstructable`)."""
    from pipelines.definitions import BUILD_JOB, build_definitions

    return build_definitions(settings_from_env()).resolve_job_def(BUILD_JOB)


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
) -> dg.JobExecutionResult:
    """Run the build job with `workers` step processes on `instance`; raises `DataRootBusy`
    when another build holds the data root for longer than `wait` seconds."""
    with data_root_lock(settings.layout, wait=wait):
        pass  # free now: this run's steps take it one writer at a time
    return dg.execute_job(
        dg.reconstructable(build_job),
        instance=instance,
        run_config=build_run_config(settings, workers, log_level),
        tags=tags,
        raise_on_error=False,
    )
