"""Dagster's migration scripts read once per test process (pipelines/orchestration/instance.py
says why), also by the storages of `dg.materialize`'s ephemeral instances, which
`open_instance` does not make."""

from __future__ import annotations

from pipelines.orchestration.instance import read_migration_scripts_once


def read_dagster_migration_scripts() -> None:
    """`read_migration_scripts_once`, with Dagster's scripts read now: in a process that forks
    builds (tests/forked.py), every fork starts with them read."""
    from alembic.script import ScriptDirectory
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.sql import get_alembic_config

    read_migration_scripts_once()
    ScriptDirectory.from_config(get_alembic_config(sqlite_run_storage.__file__)).get_heads()
