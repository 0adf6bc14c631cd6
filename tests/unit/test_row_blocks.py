"""A large file's study sessions are typed a block at a time while they are read (`RowBlocks`),
and a batch writes them in their place among the other files' rows."""

from __future__ import annotations

import orjson
import polars as pl
import pyarrow as pa
import pytest

from pipelines.config.settings import Settings
from pipelines.ingest.arrow_typed import ArrowTypedBatch
from pipelines.ingest.batches import part_files
from pipelines.sources import row_blocks, study
from pipelines.sources.base import ParseResult, RawFile
from pipelines.sources.row_blocks import RowBlocks
from pipelines.sources.study.columns import FastSessions
from pipelines.storage.layout import Layout

TABLE = "study_sessions"
MASTER = "survey_responses/conversations/all_conversations.jsonl"


def _row(session_id: str, turn_count: object = 1) -> dict:
    return {"file": "f", "locator": session_id, "session_id": session_id, "turn_count": turn_count}


def test_rows_are_typed_a_full_block_at_a_time_and_read_back_as_given():
    rows = RowBlocks(TABLE, block_rows=2)
    for i in range(5):
        rows.append(_row(f"s{i}", i))
    kinds = [type(block) for block in rows.blocks()]
    assert kinds == [pa.Table, pa.Table, list]  # 2 + 2 typed, the 5th row not yet a block
    assert len(rows) == 5
    back = list(rows)
    assert [(r["session_id"], r["turn_count"]) for r in back] == [(f"s{i}", i) for i in range(5)]
    assert back[0]["history"] is None and back[0]["iql"] is None  # absent keys are nulls


def test_a_block_arrow_refuses_stays_dicts_for_the_batch_to_judge():
    rows = RowBlocks(TABLE, block_rows=2)
    for row in [_row("a"), _row("b", "not a number"), _row("c"), _row("d")]:
        rows.append(row)
    blocks = rows.blocks()
    assert isinstance(blocks[0], list) and blocks[0][1]["turn_count"] == "not a number"
    assert isinstance(blocks[1], pa.Table)


def test_a_row_is_looked_up_by_its_index_across_typed_and_refused_blocks():
    rows = RowBlocks(TABLE, block_rows=2)
    given = [_row("a"), _row("b", "not a number"), _row("c", 3), _row("d", 4), _row("e", 5)]
    for row in given:
        rows.append(row)
    # blocks: [a, b] refused (dicts), [c, d] typed, [e] open
    assert [rows[i]["session_id"] for i in range(5)] == ["a", "b", "c", "d", "e"]
    assert rows[1]["turn_count"] == "not a number" and rows[3]["turn_count"] == 4
    assert rows[-1]["session_id"] == "e" and rows[-5]["session_id"] == "a"
    assert [r["session_id"] for r in rows[1:4]] == ["b", "c", "d"]
    with pytest.raises(IndexError):
        rows[5]
    with pytest.raises(IndexError):
        rows[-6]


def test_a_small_file_keeps_its_plain_list_of_rows():
    rows = RowBlocks(TABLE, block_rows=2)
    rows.append(_row("a"))
    assert rows.as_built() == [_row("a")]


def test_a_master_file_hands_its_sessions_over_as_typed_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(row_blocks, "BLOCK_ROWS", 2)
    path = tmp_path / MASTER
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps({"session_id": f"s{i}"}) + b"\n" for i in range(5)))
    result = study.parse_file(RawFile("study", path, MASTER), path.read_bytes(), Settings())
    sessions = result.rows[TABLE]
    # the last, partial block: the fast path's tuples (typed by the batch with its other files')
    assert [type(block) for block in sessions.blocks()] == [pa.Table, pa.Table, FastSessions]
    assert [r["locator"] for r in sessions] == [f"line {i + 1} (byte {i * 20})" for i in range(5)]


def _log_row(file: str, n: int) -> dict:
    return {
        "file": file,
        "file_id": file,
        "size_bytes": 10,
        "records_read": n,
        "n_bronze": n,
        "n_quarantine": 0,
    }


@pytest.mark.parametrize("refused", [False, True])
def test_a_batch_writes_typed_blocks_in_their_place_among_the_other_files_rows(tmp_path, refused):
    # refused: big-1's "1" is no Arrow int64, so its block stays dicts and the whole batch is typed
    # through Polars, which casts it
    blocks = RowBlocks(TABLE, block_rows=2)
    for i in range(5):
        blocks.append(_row(f"big-{i}", "1" if refused and i == 1 else i))
    assert isinstance(blocks.blocks()[0], list) == refused
    batch = ArrowTypedBatch("study", "run-1")
    batch.add_parsed(_log_row("a", 1), ParseResult(1, {TABLE: [_row("a-0", 7)]}))
    batch.add_parsed(_log_row("big", 5), ParseResult(5, {TABLE: blocks}))
    batch.add_parsed(_log_row("c", 2), ParseResult(2, {TABLE: [_row("c-0", 8), _row("c-1", 9)]}))
    logged = batch.write(Layout(tmp_path))
    part = [logged[0]["part_id"]]
    written = pl.read_parquet(part_files(Layout(tmp_path), "study", TABLE, part))
    assert written["session_id"].to_list() == ["a-0", *(f"big-{i}" for i in range(5)), "c-0", "c-1"]
    assert written["turn_count"].to_list() == [7, 0, 1, 2, 3, 4, 8, 9]
