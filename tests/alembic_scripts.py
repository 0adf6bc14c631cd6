"""Dagster's migration scripts read once per test process.

Every SQLite storage Dagster opens checks its database's Alembic revision against the scripts'
head, and a new database is stamped with it: each time, Alembic reads the ~90 migration files
again (a new `ScriptDirectory` per call, ~50 ms of CPU apiece). A build in a Dagster home does
it 5 times (runs, schedules, index, and the run's own event log checked and stamped), 9 times in
a new home, and `dg.materialize`'s ephemeral instance twice; the tests do hundreds of these.
The files do not change while the tests run, so one `ScriptDirectory` per script location serves
every storage of the process; each database is still checked, created and stamped as before.
"""

from __future__ import annotations

from typing import Any

_CACHED = "_turnlake_reads_once"


def read_migration_scripts_once() -> None:
    """Make `alembic.script.ScriptDirectory.from_config` give one directory per script location
    for the rest of this process."""
    from alembic.script import ScriptDirectory

    if getattr(ScriptDirectory.from_config, _CACHED, False):
        return
    read = ScriptDirectory.from_config
    directories: dict[Any, ScriptDirectory] = {}

    def from_config(cls: type[ScriptDirectory], config: Any) -> ScriptDirectory:
        location = config.get_alembic_option("script_location")
        if location not in directories:
            directories[location] = read(config)
        return directories[location]

    setattr(from_config, _CACHED, True)
    ScriptDirectory.from_config = classmethod(from_config)


def read_dagster_migration_scripts() -> None:
    """`read_migration_scripts_once`, with Dagster's scripts read now: in a process that forks
    builds (tests/forked.py), every fork starts with them read."""
    from alembic.script import ScriptDirectory
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.sql import get_alembic_config

    read_migration_scripts_once()
    ScriptDirectory.from_config(get_alembic_config(sqlite_run_storage.__file__)).get_heads()
