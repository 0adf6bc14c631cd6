"""Kubernetes cannot run here: the definitions load with the k8s executor, the instance yaml is
valid for every class it names, and the Job submitted for a step is snapshot-tested."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._config import process_config

from pipelines.definitions import BUILD_JOB, build_definitions, build_job, defs
from pipelines.orchestration.executors import executor_from_env

ROOT = Path(__file__).resolve().parents[2]
K8S_INSTANCE = ROOT / "deploy" / "kubernetes" / "dagster.yaml"
SNAPSHOT = ROOT / "tests" / "snapshots" / "k8s_step_job.json"
RUN_ID = "0b9c7d0e-5f3a-4c1e-9a55-6a1f2d3e4b5c"
ENV = {
    "TURNLAKE_IMAGE": "registry.example/turnlake:1.0",
    "TURNLAKE_K8S_NAMESPACE": "turnlake",
    "TURNLAKE_PG_HOST": "postgres.turnlake.svc",
    "TURNLAKE_PG_PORT": "5432",
    "TURNLAKE_PG_USER": "dagster",
    "TURNLAKE_PG_PASSWORD": "secret",
    "TURNLAKE_PG_DB": "dagster",
    "TURNLAKE_COMPUTE_LOG_BUCKET": "turnlake-logs",
}
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: unused}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


@pytest.fixture
def k8s_env(monkeypatch):
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


def _configured(section: dict, overrides: dict | None = None) -> tuple[type, dict]:
    """The class a section of dagster.yaml names and its config, validated by the class's own
    schema (env sources resolved), as Dagster does when it loads the instance."""
    module = __import__(section["module"], fromlist=[section["class"]])
    cls = getattr(module, section["class"])
    result = process_config(cls.config_type(), {**section.get("config", {}), **(overrides or {})})
    assert result.success, (section["class"], [e.message for e in result.errors])
    return cls, result.value


def test_definitions_load_with_the_k8s_executor():
    from pipelines.config.settings import settings_from_env

    k8s_defs = build_definitions(
        settings_from_env(), executor_from_env({"TURNLAKE_EXECUTOR": "k8s"})
    )
    job = k8s_defs.resolve_job_def(BUILD_JOB)
    assert job.executor_def.name == "k8s"
    # The same graph as the embedded definitions, whose executor stays Dagster's default.
    assert (
        job.asset_layer.selected_asset_keys
        == defs.resolve_job_def(BUILD_JOB).asset_layer.selected_asset_keys
    )
    assert defs.resolve_job_def(BUILD_JOB).executor_def.name == "multi_or_in_process_executor"


def test_kubernetes_instance_yaml_is_valid_for_every_class_it_names(k8s_env):
    from dagster._core.instance.config import dagster_instance_config

    config, _ = dagster_instance_config(str(K8S_INSTANCE.parent))
    names = set()
    for key in ("run_launcher", "compute_logs", "run_coordinator"):
        cls, _ = _configured(config[key])
        names.add(cls.__name__)
    assert names == {"K8sRunLauncher", "S3ComputeLogManager", "QueuedRunCoordinator"}
    pg = config["storage"]["postgres"]["postgres_db"]
    assert pg["scheme"] == "postgresql+psycopg2"
    assert config["concurrency"]["pools"] == {"default_limit": 1, "granularity": "op"}


def _stable(manifest: dict) -> dict:
    """The fields that do not depend on where the tests run or on the locked Dagster version:
    the compressed step arguments carry the interpreter's path and working directory, so only
    their presence is kept."""
    pod = manifest["spec"]["template"]
    for metadata in (manifest["metadata"], pod["metadata"]):
        metadata["labels"]["app.kubernetes.io/version"] = "<dagster version>"
    for container in pod["spec"]["containers"]:
        for env in container.get("env", []):
            if env["name"] == "DAGSTER_COMPRESSED_EXECUTE_STEP_ARGS":
                env["value"] = "<compressed ExecuteStepArgs>"
    return manifest


def test_step_job_spec_matches_the_snapshot(k8s_env, tmp_path):
    from pipelines.orchestration.kubernetes import step_job_manifest

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    raw = yaml.safe_load(K8S_INSTANCE.read_text())
    # Outside a cluster: the launcher reads a kubeconfig (it only parses it here, no call).
    cls, config = _configured(
        raw["run_launcher"],
        {"load_incluster_config": False, "kubeconfig_file": str(kubeconfig)},
    )
    launcher = cls.from_config_value(None, config)
    run = dg.DagsterRun(job_name=BUILD_JOB, run_id=RUN_ID)
    origin = dg.reconstructable(build_job).get_python_origin()
    manifest = _stable(step_job_manifest(launcher, run, "silver_tables", origin))
    if os.environ.get("TURNLAKE_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    assert manifest == json.loads(SNAPSHOT.read_text())
