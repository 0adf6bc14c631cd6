"""A contract check a partition (or a slice of rows) at a time: a bad row fails naming its table,
rule and partition; a unique value held in two partitions fails though each is valid alone; a
partition whose digest is unchanged since it passed is not read again, its pass kept beside the
partition record; a bronze part that passed is not read again, its pass kept in the ingest
log."""

import pandera.polars as pa
import polars as pl
import pytest
from deltalake import DeltaTable

from pipelines.checks import partitioned
from pipelines.checks.partitioned import validate_parts, validate_table
from pipelines.checks.passes import remember
from pipelines.checks.revalidate import REVALIDATE_ENV
from pipelines.ingest import log as ingest_log
from pipelines.ingest.batches import part_files, part_table
from pipelines.partitions.assign import PARTITION
from pipelines.partitions.store import DIGESTS_TABLE, PASSES_TABLE, recorded_passes
from pipelines.storage import bronze
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

ENGINE = "engine-1"


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


def _judge(layout: Layout, engine: str = ENGINE):
    """Judge, then record what passed, as a build step does (checks/factory.py)."""
    verdict = validate_table(Things, layout, "silver", "things", engine)
    remember(layout, [verdict.passes], engine)
    return verdict


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


def test_a_pass_is_kept_beside_the_partition_record_and_a_no_op_judging_writes_nothing(layout):
    _judge(layout)
    # by hand: every partition passed with the digest the record holds for it
    assert recorded_passes(layout, "silver", "things", ENGINE) == {
        "p1": "d1",
        "p2": "d2",
        "p3": "d3",
    }
    snapshots = len(stored.history(layout, "silver"))
    again = _judge(layout)
    assert again.metadata["partitions_reused"] == 3
    assert len(stored.history(layout, "silver")) == snapshots  # nothing new to record
    meta = stored.snapshot(layout, "silver").meta
    assert stored.exists(layout, "silver", PASSES_TABLE) and meta == {}  # metadata carried over


def test_another_engine_judges_every_partition_again(layout):
    _judge(layout)
    other = _judge(layout, engine="engine-2")
    assert (other.metadata["partitions_validated"], other.metadata["partitions_reused"]) == (3, 0)


SOURCE, TABLE = "x", "things"
BRONZE_SCHEMA = pl.Schema({"thing_id": pl.String, "score": pl.Float64})


def _log_row(file: str, part: str) -> dict:
    return {"source": SOURCE, "file": file, "part_id": part, "tables": [TABLE], "records_read": 1}


def _bronze(layout: Layout, parts: dict[str, pl.DataFrame], files: dict[str, str]) -> None:
    """Write `parts` (part id → rows) and a log naming `files` (raw file → part id)."""
    for part, rows in parts.items():
        bronze.write_part(part_table(layout, SOURCE, TABLE), rows, part, None)
    rows = [_log_row(file, part) for file, part in files.items()]
    ingest_log.write_log(layout, SOURCE, ingest_log.log_frame(rows))


def _judge_parts(layout: Layout, engine: str = ENGINE):
    verdict = validate_parts(Things, layout, SOURCE, TABLE, engine)
    remember(layout, [verdict.passes], engine)
    return verdict


def _things(ids: list[str], scores: list[float]) -> pl.DataFrame:
    return pl.DataFrame({"thing_id": ids, "score": scores}, schema=BRONZE_SCHEMA)


@pytest.fixture
def bronze_layout(tmp_path, monkeypatch):
    monkeypatch.delenv(REVALIDATE_ENV, raising=False)
    monkeypatch.setattr(partitioned, "FILE_BYTES", 1)  # one file per group
    layout = Layout(tmp_path)
    clean = {"p1": _things(["a"], [0.1]), "p2": _things(["b"], [0.2])}
    _bronze(layout, clean, {"f1": "p1", "f2": "p2", "f2b": "p2"})
    return layout


def test_bronze_parts_are_checked_a_group_at_a_time_and_a_passed_part_is_not_read_again(
    bronze_layout,
):
    first = _judge_parts(bronze_layout)
    assert first.passed and first.metadata["rows"] == 2
    assert first.metadata["partitions_validated"] == 2
    log = ingest_log.read_log(bronze_layout, SOURCE)
    # by hand: every row holds its own part's verdict, p2's for both files of p2
    verdicts = {r["file"]: r["passed"] for r in log.iter_rows(named=True)}
    assert verdicts == {
        "f1": {"part_id": "p1", "engine": ENGINE, "tables": [TABLE]},
        "f2": {"part_id": "p2", "engine": ENGINE, "tables": [TABLE]},
        "f2b": {"part_id": "p2", "engine": ENGINE, "tables": [TABLE]},
    }
    bronze.write_part(
        part_table(bronze_layout, SOURCE, TABLE), _things(["c", "d"], [0.3, -0.5]), "p3", None
    )
    kept = log.vstack(ingest_log.log_frame([_log_row("f3", "p3")]))
    ingest_log.write_log(bronze_layout, SOURCE, kept)
    verdict = _judge_parts(bronze_layout)
    assert not verdict.passed and verdict.metadata["rows"] == 4
    # by hand: p1 and p2 passed before, only p3 is read; it holds the one bad row
    assert (verdict.metadata["partitions_validated"], verdict.metadata["partitions_reused"]) == (
        1,
        2,
    )
    bad_file = part_files(bronze_layout, SOURCE, TABLE, ["p3"])[0].rsplit("/", 1)[-1]
    assert verdict.metadata["failed_partitions"] == bad_file
    assert "-0.5" in verdict.metadata["failure_summary"]
    # the failed part is never remembered: judged again, it fails again
    again = _judge_parts(bronze_layout)
    assert not again.passed
    assert (again.metadata["partitions_validated"], again.metadata["partitions_reused"]) == (1, 2)


def test_a_verdict_of_another_part_or_engine_or_a_log_without_verdicts_judges_again(
    bronze_layout,
):
    _judge_parts(bronze_layout)
    log = ingest_log.read_log(bronze_layout, SOURCE)
    # a row copied onto a new part carries its old part's verdict: it does not hold for p2 now
    moved = log.with_columns(
        pl.when(pl.col("file") == "f2b")
        .then(pl.struct(part_id=pl.lit("p-old"), engine=pl.lit(ENGINE), tables=pl.lit([TABLE])))
        .otherwise(pl.col("passed"))
        .alias("passed")
    )
    ingest_log.write_log(bronze_layout, SOURCE, moved)
    verdict = _judge_parts(bronze_layout)
    assert (verdict.metadata["partitions_validated"], verdict.metadata["partitions_reused"]) == (
        1,
        1,
    )
    assert _judge_parts(bronze_layout, engine="engine-2").metadata["partitions_reused"] == 0


def test_a_bronze_judging_that_reads_no_part_leaves_the_ingest_log_as_it_is(bronze_layout):
    _judge_parts(bronze_layout)
    log = str(bronze_layout.ingest_log(SOURCE))
    before = DeltaTable(log).version()
    assert _judge_parts(bronze_layout).metadata["partitions_reused"] == 2
    assert DeltaTable(log).version() == before  # no commit: every verdict held


def test_revalidation_reads_every_bronze_part_again(bronze_layout, monkeypatch):
    _judge_parts(bronze_layout)
    monkeypatch.setenv(REVALIDATE_ENV, "1")
    assert _judge_parts(bronze_layout).metadata["partitions_validated"] == 2


def test_a_rows_verdict_lists_its_passed_tables_sorted_whatever_order_they_come_in():
    """The verdict's tables are a set kept sorted, so judging the same parts again leaves the
    log equal to itself (no rewrite) whatever order the tables were named or judged in."""
    earlier = {"part_id": "p1", "engine": ENGINE, "tables": ["z_table"]}
    log = ingest_log.log_frame(
        [_log_row("f1", "p1") | {"tables": ["b_table", "a_table"], "passed": earlier}]
    )
    after = ingest_log.with_verdicts(log, {"b_table": {"p1"}, "a_table": {"p1"}}, ENGINE)
    # by hand: z_table still holds (same part and engine, not judged now), a and b passed now
    assert after.get_column("passed").to_list() == [
        {"part_id": "p1", "engine": ENGINE, "tables": ["a_table", "b_table", "z_table"]}
    ]
    assert ingest_log.with_verdicts(after, {"a_table": {"p1"}, "b_table": {"p1"}}, ENGINE).equals(
        after
    )
