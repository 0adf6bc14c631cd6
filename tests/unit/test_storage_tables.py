"""storage/tables.py on tiny frames: a layer's tables become current together, readers read the
versions the snapshot log names (so a crash between two table commits leaves the previous
snapshot whole), as-of picks the snapshot in force at a time, vacuum spares current versions."""

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from pipelines.storage import tables
from pipelines.storage.layout import Layout

PUBLISH_TWO_TABLES = (
    "import sys; from pathlib import Path; import polars as pl\n"
    "from pipelines.storage import tables; from pipelines.storage.layout import Layout\n"
    "tables.publish(Layout(Path(sys.argv[1])), 'silver', "
    "{'a': pl.DataFrame({'x': [10, 20]}), 'b': pl.DataFrame({'y': ['new']})}, {'inputs': 'v2'})\n"
)


def publish(layout: Layout, a: list[int], b: list[str], inputs: str) -> tables.Snapshot:
    frames = {"a": pl.DataFrame({"x": a}), "b": pl.DataFrame({"y": b})}
    return tables.publish(layout, "silver", frames, {"inputs": inputs})


def test_published_tables_read_back_with_their_metadata(tmp_path):
    layout = Layout(tmp_path)
    assert tables.snapshot(layout, "silver") is None
    assert not tables.exists(layout, "silver", "a")
    publish(layout, [1, 2], ["old"], "v1")
    assert tables.read(layout, "silver", "a")["x"].to_list() == [1, 2]
    assert tables.read(layout, "silver", "b")["y"].to_list() == ["old"]
    assert tables.meta(layout, "silver", "inputs") == "v1"
    assert tables.rows(layout, "silver", "a") == 2
    assert all(Path(f).is_file() for f in tables.files(layout, "silver", "a"))


def test_tables_under_a_data_root_whose_path_has_a_space_or_percent_read_back(tmp_path):
    layout = Layout(tmp_path / "my data 100%")  # delta-rs percent-encodes the file URIs
    publish(layout, [1, 2], ["old"], "v1")
    assert tables.read(layout, "silver", "a")["x"].to_list() == [1, 2]
    assert tables.rows(layout, "silver", "b") == 1
    assert all(Path(f).is_file() for f in tables.files(layout, "silver", "a"))


def test_a_table_stored_whole_reads_as_the_one_partition_it_is(tmp_path):
    """Whole tables are one partition: read by partition key like a partitioned table's, named
    "b00000-whole-s00"; a whole table that holds partition keys as data (a digests table) keeps
    them."""
    layout = Layout(tmp_path)
    frames = {"a": pl.DataFrame({"x": [1, 2]}), "d": pl.DataFrame({"_partition": ["p1"]})}
    tables.publish(layout, "silver", frames)
    one = tables.read(layout, "silver", "a", partitions=["b00000-whole-s00"], with_partition=True)
    assert one.to_dict(as_series=False) == {
        "x": [1, 2],
        "_partition": ["b00000-whole-s00", "b00000-whole-s00"],
    }
    other = tables.read(layout, "silver", "a", partitions=["b00001-train-s00"])
    assert other.columns == ["x"] and other.is_empty()
    assert tables.read(layout, "silver", "a")["x"].to_list() == [1, 2]
    digests = tables.read(layout, "silver", "d", with_partition=True)
    assert digests.get_column("_partition").to_list() == ["p1"]


def test_a_partitioned_table_scans_as_one_frame_per_partition_in_key_order(tmp_path):
    layout = Layout(tmp_path)
    rows = pl.DataFrame({"x": [3, 1, 2], "_partition": ["b00002-s00", "b00000-s01", "b00002-s00"]})
    keys = ["b00000-s01", "b00002-s00"]
    tables.publish(
        layout, "silver", {"t": rows, "w": rows.drop("_partition")}, partitions={"t": keys}
    )
    parts = tables.scan_by_partition(layout, "silver", "t")
    assert [sorted(part.collect()["x"]) for part in parts] == [[1], [2, 3]]
    (whole,) = tables.scan_by_partition(layout, "silver", "w")  # stored whole: one partition
    assert sorted(whole.collect()["x"]) == [1, 2, 3]


def test_a_missing_table_reads_as_an_empty_frame_only_when_a_schema_is_given(tmp_path):
    layout = Layout(tmp_path)
    schema = pl.Schema({"x": pl.Int64})
    assert tables.read(layout, "silver", "a", schema=schema).schema == schema
    with pytest.raises(FileNotFoundError):
        tables.read(layout, "silver", "a")


def test_splits_is_read_from_its_own_layer_though_listed_with_gold(tmp_path):
    layout = Layout(tmp_path)
    tables.publish(layout, "splits", {"splits": pl.DataFrame({"g": ["g1"]})})
    assert tables.read(layout, "gold", "splits")["g"].to_list() == ["g1"]
    assert tables.snapshot(layout, "gold") is None


def test_a_partial_publish_keeps_the_versions_of_the_tables_it_does_not_name(tmp_path):
    layout = Layout(tmp_path)
    first = publish(layout, [1], ["old"], "v1")
    second = tables.publish(layout, "silver", {"a": pl.DataFrame({"x": [5]})}, {"inputs": "v2"})
    assert second.versions == {"a": first.versions["a"] + 1, "b": first.versions["b"]}
    assert tables.read(layout, "silver", "b")["y"].to_list() == ["old"]


def test_a_crash_between_table_commits_leaves_the_previous_snapshot_readable(tmp_path):
    layout = Layout(tmp_path)
    publish(layout, [1, 2], ["old"], "v1")
    env = {**os.environ, "TURNLAKE_KILL_AT": "silver:between_commits"}
    killed = subprocess.run(
        [sys.executable, "-c", PUBLISH_TWO_TABLES, str(tmp_path)], env=env, check=False
    )
    assert killed.returncode == -signal.SIGKILL
    # table `a` has a newer Delta version on disk, but the snapshot still names the old pair
    assert tables.read(layout, "silver", "a")["x"].to_list() == [1, 2]
    assert tables.read(layout, "silver", "b")["y"].to_list() == ["old"]
    assert tables.meta(layout, "silver", "inputs") == "v1"
    tables.vacuum(layout, retention_hours=0)  # the crashed commit must not cost the current one
    assert tables.read(layout, "silver", "a")["x"].to_list() == [1, 2]


def test_as_of_reads_the_snapshot_in_force_at_that_time(tmp_path):
    layout = Layout(tmp_path)
    publish(layout, [1], ["first"], "v1")
    between = datetime.now(UTC)
    time.sleep(0.01)
    publish(layout, [1, 2, 3], ["second"], "v2")
    assert tables.read(layout, "silver", "a", as_of=between)["x"].to_list() == [1]
    assert tables.meta(layout, "silver", "inputs", as_of=between) == "v1"
    assert tables.read(layout, "silver", "a")["x"].to_list() == [1, 2, 3]
    assert tables.snapshot(layout, "silver", as_of=datetime(2000, 1, 1, tzinfo=UTC)) is None
    assert tables.versions(layout, between) == {"silver": {"a": 0, "b": 0}}


def test_naive_timestamps_are_utc_and_non_timestamps_are_refused():
    assert tables.parse_time("2026-11-23T21:00:00") == datetime(2026, 11, 23, 21, tzinfo=UTC)
    with pytest.raises(ValueError):
        tables.parse_time("yesterday")


def test_a_version_vacuumed_away_fails_with_a_clear_error_not_a_missing_file(tmp_path):
    layout = Layout(tmp_path)
    publish(layout, [1], ["first"], "v1")
    between = datetime.now(UTC)
    time.sleep(0.01)
    publish(layout, [2], ["second"], "v2")
    tables.vacuum(layout, retention_hours=0)
    assert tables.read(layout, "silver", "a")["x"].to_list() == [2]
    with pytest.raises(tables.TableVersionGone, match="silver.a"):
        tables.read(layout, "silver", "a", as_of=between)


def test_the_default_retention_keeps_recent_versions_readable(tmp_path):
    layout = Layout(tmp_path)
    publish(layout, [1], ["first"], "v1")
    between = datetime.now(UTC)
    time.sleep(0.01)
    publish(layout, [2], ["second"], "v2")
    tables.vacuum(layout)
    assert tables.read(layout, "silver", "a", as_of=between)["x"].to_list() == [1]


def test_forget_history_keeps_only_the_current_snapshot(tmp_path):
    layout = Layout(tmp_path)
    publish(layout, [1], ["first"], "v1")
    publish(layout, [2], ["second"], "v2")
    tables.forget_history(layout)
    assert [s.meta["inputs"] for s in tables.history(layout, "silver")] == ["v2"]


def test_content_digest_follows_bytes_not_versions(tmp_path):
    layout = Layout(tmp_path)
    publish(layout, [1], ["same"], "v1")
    before = tables.content_digest(layout, "silver", "b")
    publish(layout, [2], ["same"], "v2")
    assert tables.content_digest(layout, "silver", "b") == before
    assert tables.content_digest(layout, "silver", "nothing") == "absent"
