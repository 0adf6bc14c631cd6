"""A contract check a partition (or a slice of rows) at a time: a bad row fails naming its table,
rule and partition; a unique value held in two partitions fails though each is valid alone; a
partition whose digest is unchanged since it passed is not read again."""

import pandera.polars as pa
import polars as pl
import pytest

from pipelines.checks import partitioned
from pipelines.checks.partitioned import validate_table
from pipelines.checks.revalidate import REVALIDATE_ENV
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.store import DIGESTS_TABLE
from pipelines.storage import tables as stored
from pipelines.storage.fingerprint import stat_part
from pipelines.storage.layout import Layout

CHECK = "silver_things:things_matches_contract"


class Things(pa.DataFrameModel):
    thing_id: str = pa.Field(unique=True)
    score: float = pa.Field(ge=0.0, le=1.0)

    class Config:
        strict = True


def _rows(partition: str, ids: list[str], scores: list[float]) -> pl.DataFrame:
    return pl.DataFrame({"thing_id": ids, "score": scores, PARTITION: [partition] * len(ids)})


CLEAN = {
    "p1": _rows("p1", ["a", "b"], [0.1, 0.2]),
    "p2": _rows("p2", ["c", "d"], [0.3, 0.4]),
    "p3": _rows("p3", ["e", "f", "g"], [0.5, 0.6, 0.7]),
}


def _digests(digest: dict[str, str]) -> pl.DataFrame:
    return pl.DataFrame(
        {PARTITION: list(digest), "digest": list(digest.values()), "rows": [1] * len(digest)}
    )


def _publish(layout: Layout, parts: dict[str, pl.DataFrame], digest: dict[str, str], keys=None):
    """The partitions `keys` (default: all, the table rewritten) with these rows; the layer's
    digests of every partition."""
    frames = {"things": pl.concat(parts.values()), DIGESTS_TABLE: _digests(digest)}
    targets = stored.WHOLE if keys is None else keys
    stored.publish(layout, "silver", frames, partitions={"things": targets})


def _judge(layout: Layout):
    return validate_table(Things, layout, "silver", "things", CHECK, code="code-1")


@pytest.fixture
def layout(tmp_path, monkeypatch):
    monkeypatch.delenv(REVALIDATE_ENV, raising=False)
    layout = Layout(tmp_path)
    _publish(layout, CLEAN, {"p1": "d1", "p2": "d2", "p3": "d3"})
    return layout


def test_a_clean_partitioned_table_passes_having_read_every_partition(layout):
    verdict = _judge(layout)
    assert verdict.passed
    assert verdict.metadata["rows"] == 7
    assert verdict.metadata["partitions_validated"] == 3
    assert verdict.metadata["partitions_reused"] == 0


def test_a_change_in_one_partition_revalidates_only_that_partition(layout):
    _judge(layout)
    again = _judge(layout)
    assert (again.metadata["partitions_validated"], again.metadata["partitions_reused"]) == (0, 3)
    changed = {"p2": _rows("p2", ["c", "d", "h"], [0.3, 0.4, 0.9])}
    _publish(layout, changed, {"p1": "d1", "p2": "d2-new", "p3": "d3"}, keys=["p2"])
    after = _judge(layout)
    assert after.passed and after.metadata["rows"] == 8
    assert (after.metadata["partitions_validated"], after.metadata["partitions_reused"]) == (1, 2)


def test_revalidation_reads_every_partition_again(layout, monkeypatch):
    _judge(layout)
    monkeypatch.setenv(REVALIDATE_ENV, "1")
    assert _judge(layout).metadata["partitions_validated"] == 3


def test_a_corrupted_row_in_one_partition_fails_naming_partition_column_and_rule(layout):
    _judge(layout)  # every partition passed once
    bad = {"p3": _rows("p3", ["e", "f", "g"], [0.5, 1.5, 0.7])}
    _publish(layout, bad, {"p1": "d1", "p2": "d2", "p3": "d3-bad"}, keys=["p3"])
    verdict = _judge(layout)
    assert not verdict.passed
    assert verdict.metadata["failed_partitions"] == "p3"
    assert verdict.metadata["failures"] == 1
    summary = verdict.metadata["failure_summary"]
    assert "p3" in summary and "score" in summary and "less_than_or_equal_to(1.0)" in summary
    assert "1.5" in summary
    # the failed partition is never answered from an earlier pass
    assert not _judge(layout).passed


def test_a_value_unique_in_each_partition_but_held_by_two_fails(layout):
    twice = {"p2": _rows("p2", ["c", "a"], [0.3, 0.4])}  # `a` is in p1 already
    _publish(layout, twice, {"p1": "d1", "p2": "d2-dup", "p3": "d3"}, keys=["p2"])
    verdict = _judge(layout)
    assert not verdict.passed
    assert verdict.metadata["failed_partitions"] == "p1, p2"
    assert "field_uniqueness" in verdict.metadata["failure_summary"]


def test_a_table_stored_whole_is_checked_in_slices_with_the_same_verdict(tmp_path, monkeypatch):
    monkeypatch.setattr(partitioned, "CHECK_ROWS", 2)
    layout = Layout(tmp_path)
    frame = pl.DataFrame({"thing_id": ["a", "b", "c", "a", "e"], "score": [0.1, 0.2, -1, 0.4, 1]})
    stored.publish(layout, "silver", {"things": frame})
    verdict = _judge(layout)
    assert not verdict.passed
    assert verdict.metadata["rows"] == 5 and verdict.metadata["failures"] == 3  # -1, `a` twice
    summary = verdict.metadata["failure_summary"]
    assert "greater_than_or_equal_to(0.0)" in summary and "field_uniqueness" in summary
    assert verdict.metadata["failed_partitions"] == partitioned.WHOLE_PIECE


def test_a_partition_bigger_than_a_piece_is_read_in_slices_and_passes_only_if_every_slice_does(
    layout, monkeypatch
):
    monkeypatch.setattr(partitioned, "CHECK_ROWS", 2)  # p3's 3 rows: two slices
    bad = {"p3": _rows("p3", ["e", "f", "g"], [1.5, 0.6, 0.7])}  # the bad row in the first slice
    _publish(layout, bad, {"p1": "d1", "p2": "d2", "p3": "d3-bad"}, keys=["p3"])
    verdict = _judge(layout)
    assert not verdict.passed and verdict.metadata["failed_partitions"] == "p3"
    assert verdict.metadata["failures"] == 1 and verdict.metadata["partitions_validated"] == 3
    # p3's clean second slice did not record a pass: judged again, it fails again
    again = _judge(layout)
    assert not again.passed and again.metadata["partitions_reused"] == 2


def _part(root, name: str, ids: list[str], scores: list[float]):
    path = root / "bronze" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"thing_id": ids, "score": scores}).write_parquet(path)
    return path


def _judge_files(layout: Layout, files):
    schema = pl.Schema({"thing_id": pl.String, "score": pl.Float64})
    check = "bronze_x:things_matches_contract"
    return partitioned.validate_files(Things, layout, files, schema, check, code="code-1")


def test_bronze_part_files_are_checked_a_group_at_a_time_and_a_passed_file_is_not_read_again(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(REVALIDATE_ENV, raising=False)
    monkeypatch.setattr(partitioned, "FILE_BYTES", 1)  # one file per group
    layout = Layout(tmp_path)
    files = [
        _part(tmp_path, "p-1.parquet", ["a"], [0.1]),
        _part(tmp_path, "p-2.parquet", ["b"], [0.2]),
    ]
    first = _judge_files(layout, files)
    assert first.passed and first.metadata["rows"] == 2
    assert first.metadata["partitions_validated"] == 2
    bad = _part(tmp_path, "p-3.parquet", ["c", "d"], [0.3, -0.5])
    verdict = _judge_files(layout, [*files, bad])
    assert not verdict.passed and verdict.metadata["rows"] == 4
    # by hand: p-1 and p-2 passed before, only p-3 is read; it holds the one bad row
    assert (verdict.metadata["partitions_validated"], verdict.metadata["partitions_reused"]) == (
        1,
        2,
    )
    assert verdict.metadata["failed_partitions"] == "p-3.parquet"
    assert "-0.5" in verdict.metadata["failure_summary"]


def test_a_part_files_stat_line_follows_the_generation_a_link_points_to(tmp_path):
    """The key a bronze part file's pass is kept under: where it resolves to (relative to the
    data root, so a copied data root still matches), so a link to another generation is not
    taken for the file that passed."""
    (tmp_path / "silver.a").mkdir()
    (tmp_path / "silver.b").mkdir()
    for gen in ("a", "b"):
        (tmp_path / f"silver.{gen}" / "turns.parquet").write_bytes(b"same bytes")
    link = tmp_path / "silver"
    link.symlink_to("silver.a")
    before = stat_part(link / "turns.parquet", tmp_path)
    link.unlink()
    link.symlink_to("silver.b")
    assert stat_part(link / "turns.parquet", tmp_path) != before
    assert before.startswith("silver.a/turns.parquet|")
