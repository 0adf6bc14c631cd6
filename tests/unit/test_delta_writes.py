"""A table changes layout (partitioned ↔ whole) or schema only by a whole rewrite
(pipelines/storage/delta_writes.py)."""

import polars as pl
import pytest
from deltalake import DeltaTable

from pipelines.storage.delta_writes import (
    PARTITION,
    LayoutChanged,
    commit_partitions,
    overwrite_whole,
    scan_files,
)


def _rows(uri: str) -> list[tuple]:
    return sorted(pl.read_delta(uri).select(sorted(pl.read_delta(uri).columns)).rows())


def test_a_whole_table_becomes_partitioned_and_back(tmp_path):
    uri = str(tmp_path / "t")
    overwrite_whole(uri, pl.DataFrame({"x": [1, 2]}))
    commit_partitions(uri, pl.DataFrame({"x": [3, 4], PARTITION: ["p", "q"]}), None)
    assert DeltaTable(uri).metadata().partition_columns == [PARTITION]
    assert _rows(uri) == [("p", 3), ("q", 4)]
    overwrite_whole(uri, pl.DataFrame({"x": [5]}))
    assert DeltaTable(uri).metadata().partition_columns == []
    assert _rows(uri) == [(5,)]


def test_replacing_some_partitions_of_a_whole_table_is_refused(tmp_path):
    uri = str(tmp_path / "t")
    overwrite_whole(uri, pl.DataFrame({"x": [1, 2], PARTITION: ["p", "q"]}))
    with pytest.raises(LayoutChanged, match="rewrite the whole table"):
        commit_partitions(uri, pl.DataFrame({"x": [3], PARTITION: ["p"]}), ["p"])
    assert _rows(uri) == [("p", 1), ("q", 2)]


def test_a_schema_change_rewrites_whole_only_when_every_partition_is_replaced(tmp_path):
    uri = str(tmp_path / "t")
    commit_partitions(uri, pl.DataFrame({"x": [1, 2], PARTITION: ["p", "q"]}), None)
    wider = pl.DataFrame({"x": [3], "y": ["a"], PARTITION: ["p"]})
    with pytest.raises(LayoutChanged):
        commit_partitions(uri, wider, ["p"])  # q would keep the old schema
    commit_partitions(
        uri, pl.concat([wider, wider.with_columns(pl.lit("q").alias(PARTITION))]), ["p", "q"]
    )
    assert _rows(uri) == [("p", 3, "a"), ("q", 3, "a")]


def test_replacing_partitions_keeps_the_others(tmp_path):
    uri = str(tmp_path / "t")
    commit_partitions(uri, pl.DataFrame({"x": [1, 2], PARTITION: ["p", "q"]}), None)
    commit_partitions(uri, pl.DataFrame({"x": [9], PARTITION: ["p"]}), ["p"])
    assert _rows(uri) == [("p", 9), ("q", 2)]


@pytest.mark.parametrize("partitioned", [True, False])
def test_scan_files_reads_a_table_under_a_path_with_a_space(tmp_path, partitioned):
    uri = str(tmp_path / "a root" / "t")  # delta-rs gives its files as `a%20root`
    if partitioned:
        commit_partitions(uri, pl.DataFrame({"x": [1, 2], PARTITION: ["p", "q"]}), None)
        expected = [(1, "p"), (2, "q")]
    else:
        overwrite_whole(uri, pl.DataFrame({"x": [1, 2]}))
        expected = [(1,), (2,)]
    frame = scan_files(DeltaTable(uri), None).collect()
    assert sorted(frame.rows()) == expected


def test_scan_files_of_a_table_without_files_is_its_typed_empty_frame(tmp_path):
    uri = str(tmp_path / "a root" / "t")
    commit_partitions(uri, pl.DataFrame({"x": [1], PARTITION: ["p"]}), None)
    commit_partitions(uri, pl.DataFrame(schema={"x": pl.Int64, PARTITION: pl.String}), ["p"])
    frame = scan_files(DeltaTable(uri), None).collect()
    assert frame.height == 0
    assert dict(frame.schema) == {"x": pl.Int64, PARTITION: pl.String}
