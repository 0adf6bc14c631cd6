"""Delta tables kept open while the writer lock is held (pipelines/storage/delta_cache.py) read
as a fresh open would: other processes' commits, this process's own, never removed files."""

import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from types import SimpleNamespace

import dagster as dg
import polars as pl
import pytest
from deltalake import DeltaTable

from pipelines.checks.health import published_problems
from pipelines.config.settings import Settings
from pipelines.reports.summary import build_summary
from pipelines.storage import delta_cache, tables
from pipelines.storage.delta_writes import PARTITION, commit_partitions, overwrite_whole
from pipelines.storage.layout import Layout
from pipelines.storage.lock import data_root_lock
from pipelines.storage.subject_data import delete_caches

COMMIT_PARTITION_Q = (
    "import sys; import polars as pl\n"
    "from pipelines.storage.delta_writes import commit_partitions\n"
    "commit_partitions(sys.argv[1], pl.DataFrame({'x': [2], '_partition': ['q']}), ['q'])\n"
)


def _rows(uri: str) -> list[tuple]:
    delta = delta_cache.latest(uri, None)
    assert delta is not None
    frame = pl.scan_delta(delta).collect()
    return sorted(frame.select(PARTITION, "x").rows())


def test_a_latest_read_sees_another_process_commit_and_a_writer_its_own(tmp_path):
    uri = str(tmp_path / "t")
    with data_root_lock(Layout(tmp_path / "root")):
        commit_partitions(uri, pl.DataFrame({"x": [1], PARTITION: ["p"]}), None)
        assert _rows(uri) == [("p", 1)]
        assert delta_cache.latest(uri, None) is delta_cache.latest(uri, None)  # kept open
        subprocess.run([sys.executable, "-c", COMMIT_PARTITION_Q, uri], check=True)
        assert _rows(uri) == [("p", 1), ("q", 2)]  # the other process's version 1
        version = commit_partitions(uri, pl.DataFrame({"x": [3], PARTITION: ["p"]}), ["p"])
        assert version == 2
        assert delta_cache.latest(uri, None).version() == 2  # type: ignore[union-attr]
        assert _rows(uri) == [("p", 3), ("q", 2)]


def _cached(uri: str) -> list[int]:
    delta = delta_cache.latest(uri, None)
    assert delta is not None
    return pl.scan_delta(delta).collect()["x"].to_list()


def test_a_read_after_a_cache_is_cleared_serves_only_the_new_table(tmp_path):
    # A cleared table is created again at the same uri, its versions counting from 0 anew: a
    # table kept open from before would name the removed files of the old version 0.
    layout = Layout(tmp_path)
    uri = str(layout.silver_units / "oasst.messages")  # a cache folder `forget` deletes
    with data_root_lock(layout):
        overwrite_whole(uri, pl.DataFrame({"x": [1, 2, 3]}))
        assert _cached(uri) == [1, 2, 3]
        old_files = delta_cache.pinned(uri, 0, None).file_uris()
        delete_caches(layout)  # what `forget` does: the caches go
        overwrite_whole(uri, pl.DataFrame({"x": [9]}))
        assert _cached(uri) == [9]
        pinned = delta_cache.pinned(uri, 0, None)
        assert not set(pinned.file_uris()) & set(old_files)
        assert pl.scan_delta(pinned).collect()["x"].to_list() == [9]


def test_a_pinned_read_after_a_vacuum_fails_clearly_instead_of_reading_removed_files(tmp_path):
    layout = Layout(tmp_path)
    frames = {"a": pl.DataFrame({"x": [1]})}
    with data_root_lock(layout):
        tables.publish(layout, "silver", frames, {})
        between = datetime.now(UTC)
        time.sleep(0.01)
        tables.publish(layout, "silver", {"a": pl.DataFrame({"x": [2]})}, {})
        assert tables.read(layout, "silver", "a", as_of=between)["x"].to_list() == [1]
        tables.vacuum(layout, retention_hours=0)
        with pytest.raises(tables.TableVersionGone, match="silver.a"):
            tables.files(layout, "silver", "a", as_of=between)
        with pytest.raises(tables.TableVersionGone, match="silver.a"):
            tables.read(layout, "silver", "a", as_of=between)
        assert tables.read(layout, "silver", "a")["x"].to_list() == [2]


def test_a_reading_command_keeps_a_table_open_and_still_sees_another_process_commit(tmp_path):
    uri = str(tmp_path / "t")
    commit_partitions(uri, pl.DataFrame({"x": [1], PARTITION: ["p"]}), None)
    assert delta_cache.latest(uri, None) is not delta_cache.latest(uri, None)  # no scope: afresh
    with delta_cache.reading():
        assert delta_cache.latest(uri, None) is delta_cache.latest(uri, None)
        subprocess.run([sys.executable, "-c", COMMIT_PARTITION_Q, uri], check=True)
        assert _rows(uri) == [("p", 1), ("q", 2)]
    assert delta_cache.latest(uri, None) is not delta_cache.latest(uri, None)  # scope over


def test_read_once_reads_a_version_once_while_tables_are_kept_and_every_time_outside(tmp_path):
    reads: list[int] = []

    def read(version: int):
        def make() -> int:
            reads.append(version)
            return version * 10

        return make

    uri = str(tmp_path / "t")
    with delta_cache.reading():
        assert [delta_cache.read_once(uri, v, read(v)) for v in (0, 0, 1, 1)] == [0, 0, 10, 10]
        assert reads == [0, 1]  # each version read once
        delta_cache.forget_under(str(tmp_path))  # the table deleted: its reads go with it
        assert delta_cache.read_once(uri, 1, read(1)) == 10
        assert reads == [0, 1, 1]
    assert [delta_cache.read_once(uri, 1, read(1)) for _ in range(2)] == [10, 10]
    assert reads == [0, 1, 1, 1, 1]  # outside: every call reads


def test_the_checks_of_a_step_share_the_tables_they_open(tmp_path, monkeypatch):
    # A step judges its checks after it let the writer lock go: without a scope of their own,
    # each check would open every table afresh (on S3: several requests per open).
    from pipelines.checks import factory
    from pipelines.checks.verdicts import Verdict

    uri = str(tmp_path / "t")
    commit_partitions(uri, pl.DataFrame({"x": [1], PARTITION: ["p"]}), None)
    opened = []

    class Check:
        name, asset = "c", dg.AssetKey("a")

        def judge(self, settings) -> Verdict:
            opened.append(delta_cache.latest(uri, None))
            return Verdict(True, {})

    monkeypatch.setattr(factory, "_checks_of", lambda step: (Check(), Check()))
    settings = SimpleNamespace(
        data_root=tmp_path, lock_wait_seconds=0.0
    )  # passes recorded under it
    results = list(factory.check_results("step", settings, lambda line: None))  # type: ignore[arg-type]
    assert [r.passed for r in results] == [True, True]
    assert opened[0] is opened[1]
    assert delta_cache.latest(uri, None) is not opened[0]  # nothing kept after the checks


def test_the_build_summary_and_the_health_check_open_each_table_once(demo_warehouse, monkeypatch):
    # Both read after a build has let its lock go, where nothing is kept open for them: each
    # source's ingest log was opened once per bronze table it names, and again (on S3: several
    # requests per open).
    opened: Counter[tuple[str, int | None]] = Counter()

    class Counted(DeltaTable):
        def __init__(self, table_uri, *args, **kwargs) -> None:
            opened[(str(table_uri), kwargs.get("version"))] += 1
            super().__init__(table_uri, *args, **kwargs)

    monkeypatch.setattr(delta_cache, "DeltaTable", Counted)
    build_summary(Settings(raw_root=demo_warehouse / "raw", data_root=demo_warehouse))
    assert opened and max(opened.values()) == 1, opened.most_common(3)
    opened.clear()
    assert published_problems(Layout(demo_warehouse)) == []
    assert opened and max(opened.values()) == 1, opened.most_common(3)
