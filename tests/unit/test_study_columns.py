"""Study sessions of the usual shape stay value tuples until their batch types them a column at a
time (sources/study/columns.py): the same table as Arrow's row converter gives for their dicts,
the rows in their files' order, each kind typed once per batch."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pyarrow as pa

from pipelines.ingest.arrow_typed import ArrowTypedBatch
from pipelines.ingest.batches import part_files
from pipelines.sources.base import ParseResult
from pipelines.sources.row_blocks import arrow_schema
from pipelines.sources.study import columns
from pipelines.sources.study.columns import FastSessions, SessionRows, session_table
from pipelines.sources.study.fast import session_values
from pipelines.storage.layout import Layout
from tests.unit.test_study_fast import fixture_sessions, usual_session

TABLE = "study_sessions"


def _values(session_id: str, locator: str = "file") -> tuple:
    record = {**usual_session(), "session_id": session_id}
    return ("f.json", locator, "session_file", *session_values(record, "UTC"))


def _dict(session_id: str) -> dict:
    return {"file": "f.json", "locator": "file", "copy_kind": "master", "session_id": session_id}


def test_a_usual_session_is_typed_with_its_values_by_hand():
    (row,) = session_table([_values("s1")]).to_pylist()
    assert row["history"] == [
        {"role": "operator", "text": "Leave now.", "extra": None},
        {"role": "resident", "text": "No", "extra": None},
    ]
    (step,) = row["iql"]
    assert step["q_values"] == [{"policy": "bob", "value": 0.5}, {"policy": "niki", "value": -1.25}]
    assert (step["turn"], step["judge_stance"], step["judge_confidence"]) == (1, "REFUSE", 0.9)
    assert step["ts"] == datetime(2026, 1, 9, 7, 15, 0, 500000, tzinfo=UTC)
    assert (row["created_at"], row["ended_at"]) == (datetime(2026, 1, 9, 7, 15, tzinfo=UTC), None)
    assert (row["session_id"], row["participant_id"], row["turn_count"]) == ("s1", "p1", 1)
    assert row["extra"] is None and step["extra"] is None


def test_every_fixture_session_is_typed_as_arrows_row_converter_types_its_dict():
    values = [
        ("f", locator, "session_file", *v)
        for kind in ("clean", "dirty")
        for _, locator, record, enclosing in fixture_sessions(kind)
        if (v := session_values(record, "UTC", enclosing)) is not None
    ]
    assert len(values) == 6  # the fast ones of tests/unit/test_study_fast.py, by hand
    dicts = list(FastSessions(values))
    assert session_table(values).equals(pa.Table.from_pylist(dicts, schema=arrow_schema(TABLE)))


def test_tuples_and_dicts_stay_in_their_order_and_full_blocks_are_typed():
    rows = SessionRows(block_rows=2)
    for session_id in ("a", "b", "c"):
        rows.append_values(_values(session_id))
    rows.append(_dict("d"))
    rows.append_values(_values("e"))
    kinds = [type(block) for block in rows.blocks()]
    assert kinds == [pa.Table, FastSessions, list, FastSessions]
    assert [r["session_id"] for r in rows] == ["a", "b", "c", "d", "e"]
    assert rows[3] == _dict("d") and rows[4]["locator"] == "file"
    assert len(rows) == 5


def _log_row(file: str, n: int) -> dict:
    return {"file": file, "file_id": file, "size_bytes": 1, "records_read": n, "n_bronze": n}


def test_a_batch_types_each_kind_once_and_writes_the_rows_in_the_files_order(tmp_path, monkeypatch):
    typed = []
    monkeypatch.setattr(columns, "session_table", lambda v: typed.append(len(v)) or real(v))
    real = session_table
    files: dict[str, list] = {
        "a": [("v", "a0"), ("v", "a1")],
        "b": [("d", "b0")],
        "c": [("v", "c0"), ("d", "c1"), ("v", "c2")],
    }
    batch = ArrowTypedBatch("study", "run-1")
    for name, rows in files.items():
        sessions = SessionRows()
        for kind, session_id in rows:
            if kind == "v":
                sessions.append_values(_values(session_id))
            else:
                sessions.append(_dict(session_id))
        result = ParseResult(len(rows), {TABLE: sessions.as_built()})
        batch.add_parsed(_log_row(name, len(rows)), result)
    part = [batch.write(Layout(tmp_path))[0]["part_id"]]
    written = pl.read_parquet(part_files(Layout(tmp_path), "study", TABLE, part))
    assert written["session_id"].to_list() == ["a0", "a1", "b0", "c0", "c1", "c2"]
    kinds = ["session_file", "session_file", "master", "session_file", "master", "session_file"]
    assert written["copy_kind"].to_list() == kinds
    assert typed == [4]  # a0, a1, c0, c2: one table for the batch's tuples
