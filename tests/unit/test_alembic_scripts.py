"""One reading of a script location's migration scripts per process (`read_migration_scripts_once`,
pipelines/orchestration/instance.py), from the first `open_instance` on, and a Dagster home still
created at the scripts' head with it."""

import sqlite3
from pathlib import Path

import dagster
from alembic.config import Config
from alembic.script import ScriptDirectory
from dagster._core.storage.runs.sqlite import sqlite_run_storage
from dagster._core.storage.sql import get_alembic_config

from pipelines.orchestration.instance import open_instance, read_migration_scripts_once

UNREAD = ScriptDirectory.__dict__["from_config"]  # as Alembic has it (read before any test runs)


def _scripts_at(folder: Path) -> Config:
    """An Alembic config whose script location is `folder`, with one migration (its head)."""
    (folder / "versions").mkdir(parents=True)
    (folder / "script.py.mako").write_text("")
    (folder / "versions" / "a1.py").write_text("revision = 'a1'\ndown_revision = None\n")
    config = Config()
    config.set_main_option("script_location", str(folder))
    return config


def test_configs_of_one_script_location_share_one_reading():
    read_migration_scripts_once()
    dagster = [get_alembic_config(sqlite_run_storage.__file__) for _ in range(2)]
    assert ScriptDirectory.from_config(dagster[0]) is ScriptDirectory.from_config(dagster[1])


def test_another_script_location_is_read_on_its_own(tmp_path):
    read_migration_scripts_once()
    dagster = ScriptDirectory.from_config(get_alembic_config(sqlite_run_storage.__file__))
    other = ScriptDirectory.from_config(_scripts_at(tmp_path / "other"))
    assert other is not dagster
    assert other.get_heads() == ["a1"]


def test_a_new_dagster_home_is_created_at_the_head_of_dagsters_scripts(tmp_path):
    read_migration_scripts_once()
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with open_instance(tmp_path) as instance:
        list(instance.get_runs())
    # read here without `from_config`, so not through the one reading under test
    head = ScriptDirectory(str(Path(dagster.__file__).parent / "_core" / "storage" / "alembic"))
    for database in ("history/runs.db", "history/runs/index.db", "schedules/schedules.db"):
        with sqlite3.connect(tmp_path / database) as connection:
            rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
        assert [version for (version,) in rows] == head.get_heads(), database


def test_open_instance_reads_each_script_location_once_for_the_process(tmp_path, monkeypatch):
    readings: list[str] = []

    def from_config(cls: type[ScriptDirectory], config: Config) -> ScriptDirectory:
        readings.append(config.get_alembic_option("script_location"))
        return UNREAD.__func__(cls, config)

    monkeypatch.setattr(ScriptDirectory, "from_config", classmethod(from_config))
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    for _ in range(2):  # a new home (9 checks and stamps), then the same home again (5)
        with open_instance(tmp_path) as instance:
            list(instance.get_runs())
    assert readings and len(readings) == len(set(readings))
