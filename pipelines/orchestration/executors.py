"""Which Dagster executor runs the build job.

- Embedded (default, `TURNLAKE_EXECUTOR` unset or `default`): no executor is set on the
  definitions, so Dagster keeps its own choice: `turnlake build` runs in-process, `dg launch`
  runs each step in a subprocess.
- One big machine (`multiprocess`): a step per process, forked from a forkserver that has
  already imported the project (`PRELOAD_MODULES`), at most `TURNLAKE_WORKERS` at a time. The
  same choice can be made per run with `multiprocess_run_config` (the `--config` of `dg launch`).
- Cluster (`k8s`): one Kubernetes Job per step (dagster-k8s `k8s_job_executor`); image,
  namespace, secrets and service account come from the instance's `K8sRunLauncher`
  (deploy/kubernetes/dagster.yaml), the step's pod resources from `K8S_STEP_CONFIG` here.

Every writing step is in the pool `turnlake_data_root` and takes the data-root lock, so steps
that run at the same time wait for each other (up to `[lock] wait_seconds`) instead of failing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import dagster as dg

EXECUTOR_ENV = "TURNLAKE_EXECUTOR"
WORKERS_ENV = "TURNLAKE_WORKERS"
EXECUTORS = ("default", "multiprocess", "k8s")

# Imported once by the forkserver; each step process is a fork of it, so a step does not import
# Polars, Pandera, DuckDB, Dagster's storage (SQLAlchemy, Alembic) and the asset graph again:
# ~1.5 s instead of ~10 s per step where bytecode is not cached (PYTHONDONTWRITEBYTECODE).
# Also what the steps import only when they first need it: Pandera's Polars backends (with
# Hypothesis, ~0.2 s), which every step that checks a table registers, and universal_pathlib,
# which Dagster imports to open the instance in every step (~0.06 s). Last, `step_warmup`: it
# computes the engine digest and the parser versions, once for every step (~0.5 s per step).
# A module that cannot be imported (dagster_postgres without the extra) is skipped by Python.
PRELOAD_MODULES = [
    "dagster._core.executor.multiprocess",
    "dagster._core.execution.api",
    "dagster._core.storage.sqlite_storage",
    "dagster._utils.test",
    "dagster._daemon.monitoring",
    "dagster_postgres",
    "pandera.backends.polars.builtin_checks",
    "pandera.backends.polars.container",
    "upath.core",
    "pipelines.definitions",
    "pipelines.orchestration.instance",
    "pipelines.orchestration.multiprocess",
    "pipelines.orchestration.step_warmup",
]

# One step of the build holds one table in memory (DESIGN §8); the pod is sized for it.
K8S_STEP_CONFIG: dict[str, Any] = {
    "container_config": {
        "resources": {
            "requests": {"cpu": "1", "memory": "2Gi"},
            "limits": {"memory": "4Gi"},
        }
    },
    "pod_template_spec_metadata": {"labels": {"app.kubernetes.io/part-of": "turnlake"}},
}


class ExecutorSettingError(ValueError):
    """`TURNLAKE_EXECUTOR` or `TURNLAKE_WORKERS` holds a value that is not allowed."""


def multiprocess_config(workers: int) -> dict[str, Any]:
    """Config of Dagster's multiprocess executor: `workers` steps at a time, forkserver."""
    if workers < 1:
        raise ExecutorSettingError(f"workers must be a whole number >= 1, got {workers}")
    return {
        "max_concurrent": workers,
        "start_method": {"forkserver": {"preload_modules": PRELOAD_MODULES}},
    }


def multiprocess_run_config(workers: int) -> dict[str, Any]:
    """Run config selecting the multiprocess executor for one run of the default executor."""
    return {"execution": {"config": {"multiprocess": multiprocess_config(workers)}}}


def k8s_executor() -> dg.ExecutorDefinition:
    """dagster-k8s's `k8s_job_executor` with turnlake's step pod resources (imported only
    when chosen: the Kubernetes client is not needed otherwise)."""
    from dagster_k8s import k8s_job_executor

    return k8s_job_executor.configured({"step_k8s_config": K8S_STEP_CONFIG}, name="k8s")


def _workers(environ: Mapping[str, str]) -> int:
    raw = environ.get(WORKERS_ENV, "")
    if not raw:
        return os.cpu_count() or 1
    try:
        return int(raw)
    except ValueError:
        raise ExecutorSettingError(f"{WORKERS_ENV}={raw!r}: expected a whole number >= 1") from None


def executor_from_env(environ: Mapping[str, str] | None = None) -> dg.ExecutorDefinition | None:
    """The executor named by `TURNLAKE_EXECUTOR` (None: Dagster's default, unchanged)."""
    environ = os.environ if environ is None else environ
    name = environ.get(EXECUTOR_ENV, "default").strip() or "default"
    if name == "default":
        return None
    if name == "multiprocess":
        return dg.multiprocess_executor.configured(
            multiprocess_config(_workers(environ)), name="multiprocess"
        )
    if name == "k8s":
        return k8s_executor()
    raise ExecutorSettingError(f"{EXECUTOR_ENV}={name!r}: expected one of {', '.join(EXECUTORS)}")
