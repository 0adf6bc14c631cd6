"""The Dagster instance a build records its run in: the one `DAGSTER_HOME` configures, with
Dagster's SQLite storage keeping one SQLAlchemy engine per database file.

Why: Dagster's SQLite storages make a new engine for every connection (`NullPool`), and an
engine's cache of compiled statements goes with it, so each of a build's ~275 events (44 checks
× 3, 68 step outputs, log lines) opens a database and compiles its INSERT and the index updates
again: 1.7 s of CPU of a 4.7 s warm rebuild of the demo (measured in one process, data and home
on tmpfs; ~2.6 s with the engines kept). Here each file's engine is kept with SQLAlchemy's
default pool for a file database (a connection checked out is never shared: a nested use gets
its own), until the instance is disposed. Every use is still its own transaction, committed at
its end, and an idle pooled connection holds no lock, so the files, their schema, their WAL
locking and the other readers (`dg dev`, the daemon, a build's step processes) see exactly what
they would. Any other storage (Postgres, a custom one) is used as configured.

Every connection of these engines to a database file in WAL mode (Dagster puts each file it
creates in it) runs with `synchronous=NORMAL` instead of SQLite's default FULL: a commit appends
to the WAL without an fsync, which happens at checkpoints. SQLite's documentation: WAL with
NORMAL never corrupts the database; a power loss (not a killed process) may lose the last
transactions, here the last events of the run in flight, whose data root writes are fsynced
on their own. A build commits each of its ~270 events (two for an asset event: the run's file
and the index), each fsynced under FULL: measured on the demo, ~0.2 s of CPU of a forced build's
~0.85 s storing events, and more of its wall time.

Every SQLite storage checks its database's Alembic revision against Dagster's migration scripts,
and a new database is stamped with their head: each time, Alembic reads the ~90 script files
again (a new `ScriptDirectory` per call, ~50 ms of CPU apiece), 5 times a build in a Dagster home
(runs, schedules, index, and the run's own event log checked and stamped), 9 in a new home. The
files do not change while a process runs, so from the first `open_instance` on, one
`ScriptDirectory` per script location serves every storage of the process
(`read_migration_scripts_once`); each database is still checked, created and stamped as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.runs.sqlite import sqlite_run_storage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

# Dagster's own SQLite storage, as a dagster.yaml (or its absence) names it.
DAGSTER_SQLITE = ("dagster._core.storage.sqlite_storage", "DagsterSqliteStorage")


def open_instance(home: Path) -> dg.DagsterInstance:
    """The instance configured in `home` (its dagster.yaml, or Dagster's defaults), its SQLite
    storage, if that is what it uses, swapped for `SqliteStorage` (same files)."""
    read_migration_scripts_once()
    ref = InstanceRef.from_dir(str(home))
    data = ref.storage_data
    if data is not None and (data.module_name, data.class_name) == DAGSTER_SQLITE:
        ours = ConfigurableClassData(__name__, SqliteStorage.__name__, data.config_yaml)
        ref = ref._replace(storage_data=ours)
    return dg.DagsterInstance.from_ref(ref)


_READS_ONCE = "_turnlake_reads_once"


def read_migration_scripts_once() -> None:
    """Make `alembic.script.ScriptDirectory.from_config` give one directory per script location
    for the rest of this process."""
    from alembic.script import ScriptDirectory

    if getattr(ScriptDirectory.from_config, _READS_ONCE, False):
        return
    read = ScriptDirectory.from_config
    directories: dict[Any, ScriptDirectory] = {}

    def from_config(cls: type[ScriptDirectory], config: Any) -> ScriptDirectory:
        location = config.get_alembic_option("script_location")
        if location not in directories:
            directories[location] = read(config)
        return directories[location]

    setattr(from_config, _READS_ONCE, True)
    ScriptDirectory.from_config = classmethod(from_config)  # type: ignore[method-assign]


def _synchronous_normal_in_wal(dbapi_connection: Any, _record: Any) -> None:
    """A new connection to a WAL database commits without fsync (see the module's docstring);
    a database in another journal mode keeps SQLite's default."""
    cursor = dbapi_connection.cursor()
    try:
        (mode,) = cursor.execute("PRAGMA journal_mode").fetchone()
        if mode.lower() == "wal":
            cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _engine_for_wal(engine: Engine) -> Engine:
    event.listen(engine, "connect", _synchronous_normal_in_wal)
    return engine


class SqliteEventLogStorage(sqlite_event_log.SqliteEventLogStorage):
    """Dagster's per-run SQLite event log, with one engine (and pool) per database file."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: dict[str, Engine] = {}
        self._in_schema: set[tuple[str, str]] = set()
        super().__init__(base_dir, inst_data)

    def _engine(self, shard: str) -> Engine:
        if shard not in self._engines:
            self._engines[shard] = _engine_for_wal(
                sqlite_event_log.create_engine(
                    self.conn_string_for_shard(shard),
                    connect_args={"timeout": sqlite_event_log.SQLITE_BUSY_TIMEOUT_SECONDS},
                )
            )
        return self._engines[shard]

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        # Dagster's `_connect`, with `_engine(shard)` instead of a new engine each time.
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
                # a file just created was not in WAL mode when its pooled connection was made
                engine.dispose()
            with engine.connect() as conn, conn.begin():
                yield conn

    def _in_index_schema(self, kind: str, name: str, probe: Callable[[], bool]) -> bool:
        """`probe()`, asked of the index until it says yes. Dagster asks the index's schema on
        every event it stores (does the asset-check table exist, does the asset key table have
        its index columns, has a data migration run): ~320 schema reads in a build of the demo,
        0.07 s of CPU. What is there stays there (migrations only add; `wipe` starts over), so a
        yes is kept; a no is asked again, and sees a migration another process has run since.
        Dagster's Postgres storage keeps its data migrations' answers the same way."""
        if (kind, name) in self._in_schema:
            return True
        found = probe()
        if found:
            self._in_schema.add((kind, name))
        return found

    def has_table(self, table_name: str) -> bool:
        # Dagster's, with the index's engine
        def probe() -> bool:
            engine = self._engine(sqlite_event_log.INDEX_SHARD_NAME)
            with engine.connect() as conn:
                return bool(engine.dialect.has_table(conn, table_name))

        return self._in_index_schema("table", table_name, probe)

    def has_asset_key_col(self, column_name: str) -> bool:
        column = super().has_asset_key_col
        return self._in_index_schema("column", column_name, lambda: column(column_name))

    def _has_asset_key_col_on_connection(self, conn: Connection, column_name: str) -> bool:
        column = super()._has_asset_key_col_on_connection
        return self._in_index_schema("column", column_name, lambda: column(conn, column_name))

    def has_secondary_index(self, name: str) -> bool:
        index = super().has_secondary_index
        return self._in_index_schema("migration", name, lambda: index(name))

    def wipe(self) -> None:
        super().wipe()  # deletes the runs' database files: their engines go with them
        self._dispose_engines()
        self._in_schema.clear()

    def dispose(self) -> None:
        super().dispose()
        self._dispose_engines()

    def _dispose_engines(self) -> None:
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


class SqliteRuns(sqlite_run_storage.SqliteRunStorage):
    """Dagster's SQLite run storage, with one engine (and pool) for its database file."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(conn_string, inst_data)
        self._engine = _engine_for_wal(sqlite_run_storage.create_engine(conn_string))

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engine.dispose()


class SqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage (same files under `base_dir`) built from the storages above."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self.base_dir = base_dir
        self._run_storage = SqliteRuns.from_local(_runs_directory(base_dir))
        self._event_log_storage = SqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Any) -> Any:
        return cls.from_local(inst_data=inst_data, **config_value)
