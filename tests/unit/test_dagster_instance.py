"""The instance builds record their runs in (pipelines/orchestration/instance.py): Dagster's own
SQLite files, written through one SQLAlchemy engine per database file."""

from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.runs.sqlite import sqlite_run_storage

from pipelines.orchestration import instance as module
from pipelines.orchestration.instance import open_instance


@dg.asset
def numbers() -> list[int]:
    return [1, 2, 3]


@dg.asset_check(asset=numbers)
def three_numbers(numbers: list[int]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=len(numbers) == 3)


def materialize_twice(home: Path) -> list[str]:
    with open_instance(home) as instance:
        return [
            dg.materialize([numbers, three_numbers], instance=instance).run_id for _ in range(2)
        ]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return tmp_path


def test_runs_written_through_open_instance_read_back_by_dagsters_own_instance(home: Path):
    run_ids = materialize_twice(home)
    with open_instance(home) as ours:
        assert type(ours.event_log_storage) is module.SqliteEventLogStorage
    with dg.DagsterInstance.from_config(str(home)) as dagsters:
        assert type(dagsters.event_log_storage) is sqlite_event_log.SqliteEventLogStorage
        assert {run.run_id for run in dagsters.get_runs()} == set(run_ids)
        for run_id in run_ids:
            assert dagsters.get_run_by_id(run_id).is_success
            kinds = {
                r.event_log_entry.dagster_event_type
                for r in dagsters.get_records_for_run(run_id).records
            }
            assert {
                dg.DagsterEventType.ASSET_MATERIALIZATION,
                dg.DagsterEventType.ASSET_CHECK_EVALUATION,
            } <= kinds
        latest = dagsters.get_latest_materialization_event(dg.AssetKey("numbers"))
        assert latest is not None and latest.run_id == run_ids[1]


def test_the_storage_makes_one_engine_per_database_file(home: Path, monkeypatch):
    made: list[str] = []

    def counting(real):
        def create_engine(url, **kwargs):
            made.append(Path(str(url)).stem)
            return real(url, **kwargs)

        return create_engine

    for storage in (sqlite_event_log, sqlite_run_storage):
        monkeypatch.setattr(storage, "create_engine", counting(storage.create_engine))
    run_ids = materialize_twice(home)
    # Dagster's own storage makes one engine per connection (~60 for these two runs). Here: the
    # index and the runs' database twice each (Dagster's first-use schema check, then the one
    # kept), each run's own event log once
    assert sorted(made) == sorted(["index", "index", "runs", "runs", *run_ids])


NORMAL, FULL = 1, 2  # PRAGMA synchronous values (SQLite's default is FULL)


def test_connections_to_the_run_index_and_runs_files_commit_without_fsync(home: Path):
    run_id, _ = materialize_twice(home)
    with open_instance(home) as instance:
        events = instance.event_log_storage
        shards = [run_id, sqlite_event_log.INDEX_SHARD_NAME]
        for shard in shards:
            with events._connect(shard) as conn:
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == NORMAL
        with instance.run_storage.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == NORMAL


def test_a_database_not_in_wal_mode_keeps_sqlites_synchronous_default(tmp_path: Path):
    import sqlite3

    connection = sqlite3.connect(tmp_path / "rollback.db")  # journal_mode=delete
    module._synchronous_normal_in_wal(connection, None)
    assert connection.execute("PRAGMA synchronous").fetchone() == (FULL,)


def test_the_index_schema_is_read_once_per_question_it_answered_yes(home: Path, monkeypatch):
    import traceback
    from collections import Counter

    from dagster._core.storage.event_log import sql_event_log
    from sqlalchemy.dialects.sqlite.base import SQLiteDialect

    asked: Counter = Counter()

    def counting(cls, name: str, key):
        real = getattr(cls, name)

        def probe(*args, **kwargs):
            answer = real(*args, **kwargs)
            asked[key(*args)] += answer  # only the yes answers count
            return answer

        monkeypatch.setattr(cls, name, probe)

    def table(_dialect, _conn, name, *_):
        # the tables the event log asks after; not those its schema creation checks
        asked_by = {frame.name for frame in traceback.extract_stack()}
        return ("table", name) if "supports_asset_checks" in asked_by else None

    storage = sql_event_log.SqlEventLogStorage
    counting(SQLiteDialect, "has_table", table)
    counting(storage, "has_secondary_index", lambda _self, name: ("migration", name))
    counting(storage, "_has_asset_key_col_on_connection", lambda _s, _c, col: ("column", col))
    materialize_twice(home)
    # Dagster asks each of these on every event it stores (two runs: dozens of times each); a
    # yes is read once
    assert asked[("table", "asset_check_executions")] == 1
    assert asked[("column", "last_materialization_timestamp")] == 1
    assert asked[("migration", "asset_key_index_columns")] == 1


def test_a_schema_question_answered_no_is_asked_again(home: Path, monkeypatch):
    from dagster._core.storage.event_log import sql_event_log

    answers = iter([False, True])
    calls: list[str] = []
    real = sql_event_log.SqlEventLogStorage.has_secondary_index

    def has_secondary_index(self, name: str) -> bool:
        if name != "a_migration":
            return real(self, name)
        calls.append(name)
        return next(answers)

    monkeypatch.setattr(
        sql_event_log.SqlEventLogStorage, "has_secondary_index", has_secondary_index
    )
    with open_instance(home) as instance:
        events = instance.event_log_storage
        # a data migration another process runs in between is seen
        seen = [events.has_secondary_index("a_migration") for _ in range(3)]
    assert seen == [False, True, True]
    assert calls == ["a_migration", "a_migration"]
