"""The build job through the multiprocess executor (one big machine)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from pipelines.api.roots import resolve_settings
from pipelines.config.names import SOURCES
from pipelines.definitions import build_job
from pipelines.orchestration.executors import (
    PRELOAD_MODULES,
    ExecutorSettingError,
    executor_from_env,
    multiprocess_run_config,
)
from pipelines.orchestration.multiprocess import run_build_multiprocess
from pipelines.release.store.files import latest_release
from pipelines.storage.layout import Layout
from pipelines.storage.lock import DataRootBusy
from tests.clean_env import without_turnlake_settings

RUN_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "multiprocess" / "run_config.yaml"


@pytest.mark.slow  # ~2 min on 2 busy cores: 12 step processes; the in-process build is ~40 s
def test_demo_through_two_worker_processes_gives_the_in_process_release(
    demo_warehouse, new_dagster_home, tmp_path, monkeypatch
):
    """Same raw files, same pseudonym key: the release's content hash (the version after its
    date) must not depend on how the steps were spread over processes."""
    # The step processes come from a forkserver that keeps the environment it started with.
    without_turnlake_settings(monkeypatch)
    data = tmp_path / "data"
    key = Layout(demo_warehouse).generated_pseudonym_key
    Layout(data).generated_pseudonym_key.parent.mkdir(parents=True)
    shutil.copy(key, Layout(data).generated_pseudonym_key)
    settings = resolve_settings(raw_root=demo_warehouse / "raw", data_root=data)
    with dg.DagsterInstance.from_config(str(new_dagster_home())) as instance:
        result = run_build_multiprocess(
            settings, instance, workers=2, log_level="WARNING", job=build_job
        )
        pids = {
            event.event_specific_data.metadata["pid"].value
            for event in result.all_events
            if event.event_type_value == "STEP_WORKER_STARTED"
        }
    assert result.success
    assert len(pids) > 1  # steps really ran in processes of their own
    in_process = latest_release(Layout(demo_warehouse).exports)
    multiprocess = latest_release(Layout(data).exports)
    assert multiprocess.split("-")[1] == in_process.split("-")[1]


def test_a_busy_data_root_is_reported_before_the_run_starts(
    lock_held_elsewhere, new_dagster_home, tmp_path, clean_root
):
    settings = resolve_settings(raw_root=clean_root, data_root=tmp_path / "data")
    lock_held_elsewhere(tmp_path / "data")
    with dg.DagsterInstance.from_config(str(new_dagster_home())) as instance:
        with pytest.raises(DataRootBusy, match="another turnlake build"):
            run_build_multiprocess(settings, instance, workers=2, wait=0.5, job=build_job)
        assert instance.get_runs() == []


def test_documented_run_config_is_the_one_the_code_uses():
    assert yaml.safe_load(RUN_CONFIG.read_text()) == multiprocess_run_config(2)


def test_every_module_the_forkserver_preloads_exists():
    """The forkserver skips a module it cannot import without a word: a misspelt or moved name
    would silently cost every step process its import again. Only the Postgres storage may be
    missing (an extra)."""
    missing = [name for name in PRELOAD_MODULES if importlib.util.find_spec(name) is None]
    assert missing in ([], ["dagster_postgres"])


# What a fresh interpreter has computed once it has imported the warm-up module: how many engine
# digests and parser-version closures its caches hold.
CACHED_AFTER_WARM_UP = (
    "import pipelines.orchestration.step_warmup\n"
    "from pipelines.storage import engine\n"
    "print(engine.engine_digest.cache_info().currsize,"
    " engine.code_closure_digest.cache_info().currsize)\n"
)


def test_the_forkserver_computes_the_engine_digest_and_parser_versions_once_for_every_step():
    """The forkserver preloads `step_warmup`, whose import computes them; each step process is a
    fork of the forkserver and starts with them in its caches instead of reading and hashing the
    engine's files again."""
    assert "pipelines.orchestration.step_warmup" in PRELOAD_MODULES
    done = subprocess.run(
        [sys.executable, "-c", CACHED_AFTER_WARM_UP], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["1", str(len(SOURCES))]


def test_executor_is_chosen_by_environment_and_the_default_is_unchanged():
    assert executor_from_env({}) is None  # Dagster's own default: in-process for `turnlake build`
    chosen = executor_from_env({"TURNLAKE_EXECUTOR": "multiprocess", "TURNLAKE_WORKERS": "3"})
    assert chosen.name == "multiprocess"
    config = chosen.config_schema.resolve_config({}).value["config"]
    assert config["max_concurrent"] == 3
    assert "forkserver" in config["start_method"]
    with pytest.raises(ExecutorSettingError, match="TURNLAKE_EXECUTOR='ray'"):
        executor_from_env({"TURNLAKE_EXECUTOR": "ray"})
    with pytest.raises(ExecutorSettingError, match="TURNLAKE_WORKERS='two'"):
        executor_from_env({"TURNLAKE_EXECUTOR": "multiprocess", "TURNLAKE_WORKERS": "two"})
