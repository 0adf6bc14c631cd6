"""Typing through Arrow's converter instead of Polars' row constructor: the dialogue source's bronze
rows and the ingest log, the same frames, with a fallback to Polars for a value of another type."""

from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl

from pipelines.config.settings import Settings
from pipelines.ingest.arrow_typed import ArrowTypedBatch
from pipelines.ingest.log import INGEST_LOG_SCHEMA, log_frame
from pipelines.ingest.parse import IngestContext, new_batch
from pipelines.sources import adapter
from pipelines.sources.base import RawFile
from pipelines.storage.layout import Layout

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _log_row(i: int, **changes) -> dict:
    row = {
        "source": "dialogue",
        "file": f"dialogues/s/{i}.jsonl",
        "fingerprint": "ab",
        "size_bytes": 100 + i,
        "mtime_ns": 1_700_000_000_000_000_000 + i,
        "parser_version": "v1",
        "parse_settings": "k",
        "file_id": "f1",
        "part_id": "p1",
        "tables": ["dialogue_conversations", "_quarantine"],
        "records_read": 2,
        "n_bronze": 1,
        "n_quarantine": 1,
        "n_pending": 0,
        "n_forgotten": 0,
        "pending_locators": [],
        "run_id": "r1",
        "parsed_at": T0,
        "missing_since": None,
        "appended": False,  # the ingest's own key for the report: not a log column
    }
    return {**row, **changes}


def test_the_ingest_log_frame_holds_the_rows_in_the_log_schema():
    frame = log_frame([_log_row(0), _log_row(1, missing_since=T0, pending_locators=["line 3"])])
    assert frame.schema == INGEST_LOG_SCHEMA
    assert frame.get_column("size_bytes").to_list() == [100, 101]
    assert frame.get_column("tables").to_list() == [["dialogue_conversations", "_quarantine"]] * 2
    assert frame.get_column("pending_locators").to_list() == [[], ["line 3"]]
    assert frame.get_column("missing_since").to_list() == [None, T0]
    assert frame.get_column("parsed_at").to_list() == [T0, T0]


def test_a_log_value_arrow_refuses_is_typed_by_polars_instead():
    # Text where the log holds an int: Arrow refuses "7" for int64, Polars casts it.
    frame = log_frame([_log_row(0, n_bronze="7")])
    assert frame.schema == INGEST_LOG_SCHEMA
    assert frame.get_column("n_bronze").to_list() == [7]


def _dialogue_batch(tmp_path: Path) -> ArrowTypedBatch:
    raw = tmp_path / "raw"
    folder = raw / "dialogues" / "support"
    folder.mkdir(parents=True)
    record = {
        "conversation_id": 42,
        "quality": 4,
        "tags": ["a"],
        "created_at": "2026-03-01T13:00:00+01:00",
        "turns": [
            {"role": "user", "content": "hi", "ts": 1772366400, "mood": "ok"},
            {"role": "assistant", "content": "hello"},
        ],
    }
    (folder / "c.jsonl").write_bytes(orjson.dumps(record) + b"\n")
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    ctx = IngestContext(Layout(settings.data_root), settings, "dialogue", "v", "k", [], "run")
    batch = new_batch(ctx)
    file = RawFile.under("dialogue", raw, folder / "c.jsonl")
    data = file.read_bytes()
    result = adapter("dialogue").parse_file(file, data, settings)
    batch.add_parsed({"file": file.rel_path, "size_bytes": len(data)}, result, data)
    return batch


def test_dialogue_rows_are_typed_by_arrow_with_their_contract_values(tmp_path):
    batch = _dialogue_batch(tmp_path)
    assert isinstance(batch, ArrowTypedBatch)
    # Arrow itself must take the rows (a refusal would fall back to Polars silently).
    pieces = batch._arrow_pieces("dialogue_conversations", batch.members)
    row = pl.from_arrow(pieces[0]).row(0, named=True)
    assert row["conversation_id"] == "42"
    assert row["quality"] == 4.0
    assert row["tags"] == ["a"]
    assert row["created_at"] == T0
    assert row["turns"] == [
        {"role": "user", "content": "hi", "ts": T0, "extra": '{"mood":"ok"}'},
        {"role": "assistant", "content": "hello", "ts": None, "extra": None},
    ]
