"""The Kubernetes Job the `k8s` executor submits for one step, built offline.

It takes the same steps as dagster-k8s's `K8sStepHandler.launch_step` with dagster-k8s's own
builders (container context of the run launcher merged with the executor's step config,
`construct_dagster_k8s_job`), minus the API call, so the manifest can be reviewed (and checked
with `kubectl apply --dry-run=server -f`) without a cluster. The snapshot test of this manifest
is what guards the cluster configuration here, where no Kubernetes can run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg

from pipelines.orchestration.executors import K8S_STEP_CONFIG

if TYPE_CHECKING:
    from dagster._core.remote_origin import JobPythonOrigin
    from dagster_k8s import K8sRunLauncher


def step_job_manifest(
    launcher: K8sRunLauncher, run: dg.DagsterRun, step_key: str, origin: JobPythonOrigin
) -> dict[str, Any]:
    """The Job (as the JSON the Kubernetes API receives) that runs `step_key` of `run`."""
    import kubernetes.client
    from dagster._grpc.types import ExecuteStepArgs
    from dagster_k8s.container_context import K8sContainerContext
    from dagster_k8s.job import (
        UserDefinedDagsterK8sConfig,
        construct_dagster_k8s_job,
        get_k8s_job_name,
    )

    executor_context = K8sContainerContext(
        run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(K8S_STEP_CONFIG)
    )
    context = K8sContainerContext.create_for_run(run, launcher, include_run_tags=False).merge(
        executor_context
    )
    step_args = ExecuteStepArgs(
        job_origin=origin, run_id=run.run_id, step_keys_to_execute=[step_key]
    )
    name = f"dagster-step-{get_k8s_job_name(run.run_id, step_key)}"
    job = construct_dagster_k8s_job(
        job_config=context.get_k8s_job_config(None, launcher),
        args=step_args.get_command_args(skip_serialized_namedtuple=True),
        job_name=name,
        pod_name=name,
        component="step_worker",
        user_defined_k8s_config=context.run_k8s_config,
        labels={"dagster/job": run.job_name, "dagster/op": step_key, "dagster/run-id": run.run_id},
        env_vars=[
            *step_args.get_command_env(),
            {"name": "DAGSTER_RUN_JOB_NAME", "value": run.job_name},
            {"name": "DAGSTER_RUN_STEP_KEY", "value": step_key},
        ],
    )
    manifest = kubernetes.client.ApiClient().sanitize_for_serialization(job)
    manifest["metadata"]["namespace"] = context.namespace  # given to the API call, not the body
    return manifest
