"""Silver's partition record (pipelines/partitions/store.py): one row per partition with what it was
made from (`inputs`) and what it holds (`digest`, `rows`), published as one table; the readers of
row digests (gold, the release, the contracts) never see a partition that holds no row."""

import polars as pl

from pipelines.partitions.rows import DIGESTS_SCHEMA
from pipelines.partitions.store import (
    DIGESTS_TABLE,
    input_digests,
    row_digests,
    silver_record,
)
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout


def test_a_partition_without_rows_is_recorded_by_its_inputs_and_left_out_of_the_row_digests(
    tmp_path,
):
    rows = pl.DataFrame(
        {"_partition": ["b00000-s00"], "digest": ["d0"], "rows": [3]}, schema=DIGESTS_SCHEMA
    )
    inputs = pl.DataFrame({"_partition": ["b00000-s01", "b00000-s00"], "inputs": ["i1", "i0"]})
    record = silver_record(rows, inputs)
    # b00000-s01: units (orphan events) that give no silver row
    assert record.rows() == [("b00000-s00", "d0", 3, "i0"), ("b00000-s01", None, 0, "i1")]
    layout = Layout(tmp_path)
    stored.publish(layout, "silver", {DIGESTS_TABLE: record})
    assert row_digests(layout, "silver").rows() == [("b00000-s00", "d0", 3)]
    assert input_digests(layout).rows() == [("b00000-s00", "i0"), ("b00000-s01", "i1")]


def test_a_record_without_input_digests_makes_the_next_plan_transform_every_partition(tmp_path):
    layout = Layout(tmp_path)
    assert input_digests(layout) is None and row_digests(layout, "silver") is None
    earlier = pl.DataFrame(
        {"_partition": ["p"], "digest": ["d"], "rows": [1]}, schema=DIGESTS_SCHEMA
    )
    stored.publish(layout, "silver", {DIGESTS_TABLE: earlier})  # as a version before the merge
    assert input_digests(layout) is None  # transforms/plan.py: None → silver made whole
    assert row_digests(layout, "silver").rows() == [("p", "d", 1)]
