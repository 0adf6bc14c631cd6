"""Silver's record as committed partition by partition (pipelines/partitions/store.py): what the
plan compares with is its newest version, published or not; a partition marked pending holds no
inputs; a record an earlier version published whole, or without inputs, is no record to plan
from (silver is then made whole)."""

import polars as pl

from pipelines.partitions.rows import DIGESTS_SCHEMA
from pipelines.partitions.store import (
    DIGESTS_TABLE,
    RECORD_SCHEMA,
    commit_silver_record,
    committed_silver_record,
    input_digests,
    pending,
)
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


def _record(*rows: tuple) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=RECORD_SCHEMA, orient="row")


def test_the_newest_commit_is_planned_from_while_readers_keep_the_published_one(tmp_path):
    layout = Layout(tmp_path)
    first = _record(("b00000-s00", "d0", 3, "i0"), ("b00000-s01", "d1", 2, "i1"))
    version = commit_silver_record(layout, first, None)
    stored.publish(layout, "silver", {}, committed={DIGESTS_TABLE: version})
    # a partition run: s01 pending, then recorded with new inputs; s00 untouched
    commit_silver_record(layout, pending(["b00000-s01"]), ["b00000-s01"])
    assert committed_silver_record(layout).rows() == [
        ("b00000-s00", "d0", 3, "i0"),
        ("b00000-s01", None, 0, None),
    ]
    commit_silver_record(layout, _record(("b00000-s01", "d9", 4, "i9")), ["b00000-s01"])
    assert committed_silver_record(layout).rows() == [
        ("b00000-s00", "d0", 3, "i0"),
        ("b00000-s01", "d9", 4, "i9"),
    ]
    # published: what gold, the release and the checks read, until the build publishes
    assert sorted(input_digests(layout).rows()) == [("b00000-s00", "i0"), ("b00000-s01", "i1")]


def test_a_listed_partition_without_a_row_leaves_the_record(tmp_path):
    layout = Layout(tmp_path)
    commit_silver_record(layout, _record(("a", "d", 1, "i"), ("b", "e", 1, "j")), None)
    commit_silver_record(layout, _record(), ["b"])
    assert committed_silver_record(layout).rows() == [("a", "d", 1, "i")]


def test_a_record_published_whole_or_without_inputs_is_none_to_plan_from(tmp_path):
    layout = Layout(tmp_path)
    assert committed_silver_record(layout) is None  # no silver yet
    whole = _record(("p", "d", 1, "i"))  # as the version before this one published it
    stored.publish(layout, "silver", {DIGESTS_TABLE: whole})
    assert committed_silver_record(layout) is None
    older = Layout(tmp_path / "older")
    without = pl.DataFrame({"_partition": ["p"], "digest": ["d"], "rows": [1]}, DIGESTS_SCHEMA)
    stored.publish(older, "silver", {DIGESTS_TABLE: without}, partitions={DIGESTS_TABLE: None})
    assert committed_silver_record(older) is None
