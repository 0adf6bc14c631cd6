"""A vacuum with no retention right after a delete removes the deleted files even when the clock
has not passed the delete's millisecond (delta-rs expires a tombstone only when its deletion time
is strictly before now − retention; `forget` relies on the files being gone)."""

import time
from pathlib import Path

import orjson
import polars as pl
import pytest
from deltalake import DeltaTable

from pipelines.storage import bronze, delta_cache
from pipelines.storage.delta_writes import PARTITION, commit_partitions

AHEAD_MS = 1000  # far more than a vacuum takes to start, so the unfixed one runs before it


def _stamp_newest_commit(uri: str, millis: int) -> None:
    """Set the newest commit's time and its removes' deletion times to `millis`: the delete as
    if committed in the millisecond the vacuum runs in (later, so the test does not race)."""
    log = max((Path(uri) / "_delta_log").glob("*.json"))
    actions = [orjson.loads(line) for line in log.read_bytes().splitlines() if line]
    for action in actions:
        if "commitInfo" in action:
            action["commitInfo"]["timestamp"] = millis
        if "remove" in action:
            action["remove"]["deletionTimestamp"] = millis
    log.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in actions))


def _table_with_part_p_deleted_just_now(uri: str) -> None:
    frame = pl.DataFrame({"x": [1, 2], PARTITION: ["p", "q"]})
    commit_partitions(uri, frame, None)
    DeltaTable(uri).delete(f"{PARTITION} = 'p'")
    _stamp_newest_commit(uri, time.time_ns() // 1_000_000 + AHEAD_MS)


def _bronze_vacuum(uri: str) -> None:
    bronze.vacuum(DeltaTable(uri))


def _stored_tables_vacuum(uri: str) -> None:  # what tables.vacuum (forget) and the caches call
    delta_cache.vacuum(
        uri, None, retention_hours=0, dry_run=False, enforce_retention_duration=False, full=True
    )


@pytest.mark.parametrize("vacuum", [_bronze_vacuum, _stored_tables_vacuum])
def test_a_vacuum_in_the_deletes_millisecond_still_removes_the_deleted_files(tmp_path, vacuum):
    uri = str(tmp_path / "a root" / "t")  # deltalake names it by a percent-encoded file:// URL
    _table_with_part_p_deleted_just_now(uri)
    vacuum(uri)
    left = sorted(p.parent.name for p in Path(uri).rglob("*.parquet"))
    assert left == [f"{PARTITION}=q"]


def test_a_vacuum_on_a_clock_minutes_behind_the_delete_refuses_instead_of_keeping_files(
    tmp_path, monkeypatch
):
    def no_waiting(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s instead of refusing")

    monkeypatch.setattr(time, "sleep", no_waiting)
    uri = str(tmp_path / "t")
    _table_with_part_p_deleted_just_now(uri)
    _stamp_newest_commit(uri, time.time_ns() // 1_000_000 + 10 * 60_000)
    with pytest.raises(delta_cache.ClockBehindTable, match="ahead of this clock"):
        _bronze_vacuum(uri)
