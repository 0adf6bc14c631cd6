"""A big JSON Lines file is parsed in line-aligned parts (pipelines/ingest/split.py, parts.py) and
gives the rows, quarantine and log of a whole-file parse; incremental ingest is unchanged."""

import hashlib
from pathlib import Path

import polars as pl
import pytest
from deltalake import DeltaTable

from pipelines.config.settings import Settings
from pipelines.ingest import split, tasks
from pipelines.ingest.batches import (
    PARSE_QUARANTINE_SCHEMA,
    QUARANTINE_PART,
    part_table,
    table_schema,
)
from pipelines.ingest.incremental import ingest_source
from pipelines.ingest.log import collect_bronze_garbage, read_log, scan_current
from pipelines.schemas import bronze_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.sources.base import RawFile
from pipelines.storage import bronze
from pipelines.storage.delta_writes import file_paths
from pipelines.storage.layout import Layout

FILE = "dialogues/support/chat.jsonl"
TABLE = "dialogue_conversations"


def line(n: int) -> bytes:
    """One conversation record of 78 bytes (newline excluded)."""
    return b'{"conversation_id": "c%02d", "turns": [{"role": "user", "content": "hello %02d"}]}' % (
        n,
        n,
    )


# 424 bytes. Record (first line, first byte): c01 (1, 0); c02, no turns (2, 79); c03, printed on
# two lines (3, 106; its second line starts at 133); c04 (5, 187); c05, cut short (6, 266): not
# the file's last record, so `invalid_json`, not `truncated`; c06 (7, 345).
DATA = (
    b"\n".join(
        [
            line(1),
            b'{"conversation_id": "c02"}',
            b'{"conversation_id": "c03",\n  "turns": [{"role": "user", "content": "hello 03"}]}',
            line(4),
            line(5)[:-1] + b" ",
            line(6),
        ]
    )
    + b"\n"
)
ROWS = [("c01", "line 1 (byte 0)"), ("c03", "line 3 (byte 106)")]
ROWS += [("c04", "line 5 (byte 187)"), ("c06", "line 7 (byte 345)")]
# A whole-file parse lists the records that are no JSON first, then those the adapter refused.
QUARANTINE = [("line 6 (byte 266)", "invalid_json"), ("line 2 (byte 79)", "missing_field")]
WHOLE = 1 << 30  # a threshold no file here reaches: parsed whole, as before parts


def settings(tmp_path: Path, root: str, workers: int = 1) -> Settings:
    return Settings(raw_root=tmp_path / "raw", data_root=tmp_path / root, ingest_workers=workers)


def write_raw(tmp_path: Path, data: bytes) -> RawFile:
    path = tmp_path / "raw" / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return RawFile("dialogue", path, FILE)


def ingest(tmp_path, monkeypatch, root: str, split_bytes: int, workers: int = 1):
    monkeypatch.setattr(split, "SPLIT_BYTES", split_bytes)
    return ingest_source("dialogue", settings(tmp_path, root, workers), f"run-{root}")


def stored(tmp_path: Path, root: str) -> dict[str, pl.DataFrame]:
    """Bronze and quarantine rows in the order a reader gets them, without run ids."""
    layout = Layout(tmp_path / root)
    schemas = {TABLE: bronze_schema(TABLE), QUARANTINE_PART: PARSE_QUARANTINE_SCHEMA}
    return {
        t: scan_current(layout, "dialogue", t, s).collect().drop("run_id", strict=False)
        for t, s in schemas.items()
    }


def partitions(
    tmp_path: Path, root: str, source: str = "dialogue", table: str = TABLE
) -> list[str]:
    delta = DeltaTable(part_table(Layout(tmp_path / root), source, table))
    return sorted({bronze.partition_of(path) for path in file_paths(delta)})


def test_parts_start_at_the_first_record_after_each_cut_with_the_files_lines(tmp_path, monkeypatch):
    raw = write_raw(tmp_path, DATA)
    monkeypatch.setattr(split, "SPLIT_BYTES", 150)  # 3 parts: cuts at bytes 141 and 282
    planned = split.plan_split(raw, settings(tmp_path, "d"), len(DATA))
    assert planned is not None
    # 141 is inside c03 (a line that starts no record follows it): its part runs on to c04.
    assert [(p.span.offset, p.span.line, p.end, p.span.at_end) for p in planned.parts] == [
        (0, 1, 187, False),
        (187, 5, 345, False),
        (345, 7, 424, True),
    ]
    assert [p.digest for p in planned.parts] == [
        hashlib.sha256(DATA[a:b]).hexdigest() for a, b in [(0, 187), (187, 345), (345, 424)]
    ]
    assert (planned.fingerprint, planned.size) == (hashlib.sha256(DATA).hexdigest(), 424)


def test_a_small_file_or_one_not_read_by_lines_is_parsed_whole(tmp_path, monkeypatch):
    raw = write_raw(tmp_path, DATA)
    monkeypatch.setattr(split, "SPLIT_BYTES", 150)
    assert split.plan_split(raw, settings(tmp_path, "d"), 100) is None  # below the threshold
    gz = tmp_path / "raw" / "hh_rlhf" / "x" / "train.jsonl.gz"
    gz.parent.mkdir(parents=True)
    gz.write_bytes(DATA)
    gz_file = RawFile("hh_rlhf", gz, "hh_rlhf/x/train.jsonl.gz")
    assert split.plan_split(gz_file, settings(tmp_path, "d"), len(DATA)) is None


@pytest.mark.parametrize(
    ("split_bytes", "workers", "bronze_pieces"),
    # 100: cuts at 84, 169, 254, 339 → parts at 0, 106, 187, 266 (c05 alone: no bronze row), 345
    [(150, 1, 3), (100, 2, 4)],
    ids=["three_parts_here", "four_parts_in_workers"],
)
def test_a_file_parsed_in_parts_has_the_rows_quarantine_and_log_of_a_whole_parse(
    tmp_path, monkeypatch, split_bytes, workers, bronze_pieces
):
    write_raw(tmp_path, DATA)
    ingest(tmp_path, monkeypatch, "whole", WHOLE)
    report = ingest(tmp_path, monkeypatch, "parts", split_bytes, workers)
    parts = stored(tmp_path, "parts")
    assert parts[TABLE].select("conversation_id", "locator").rows() == ROWS
    assert parts[TABLE]["line"].to_list() == [1, 3, 5, 7]
    assert parts[QUARANTINE_PART].select("locator", "error_kind").rows() == QUARANTINE
    whole = stored(tmp_path, "whole")
    assert all(parts[t].equals(whole[t]) for t in parts)
    assert len(partitions(tmp_path, "parts")) == bronze_pieces  # it was parsed in parts
    assert (report.records_read, report.n_bronze, report.n_quarantine) == (6, 4, 2)
    log = read_log(Layout(tmp_path / "parts"), "dialogue").row(0, named=True)
    assert log["fingerprint"] == hashlib.sha256(DATA).hexdigest() and log["size_bytes"] == 424
    assert (log["records_read"], log["n_bronze"], log["n_quarantine"]) == (6, 4, 2)
    assert log["tables"] == [TABLE, QUARANTINE_PART]


def test_an_unchanged_big_file_is_not_parsed_again(tmp_path, monkeypatch):
    write_raw(tmp_path, DATA)
    ingest(tmp_path, monkeypatch, "d", 150)
    before = read_log(Layout(tmp_path / "d"), "dialogue")
    report = ingest(tmp_path, monkeypatch, "d", 150)
    assert (report.files_parsed, report.files_reused) == (0, 1)
    assert read_log(Layout(tmp_path / "d"), "dialogue").equals(before)


def test_a_grown_big_file_is_parsed_from_its_tail(tmp_path, monkeypatch):
    write_raw(tmp_path, DATA)
    ingest(tmp_path, monkeypatch, "grown", 150)
    write_raw(tmp_path, DATA + line(8) + b"\n")
    report = ingest(tmp_path, monkeypatch, "grown", 150)
    assert (report.files_parsed, report.files_appended) == (1, 1)
    ingest(tmp_path, monkeypatch, "fresh", WHOLE)
    grown, fresh = stored(tmp_path, "grown"), stored(tmp_path, "fresh")
    # (a grown file's tail rows come before its kept ones, parts or not: pipelines/ingest/append)
    assert grown[TABLE].sort("line").select("conversation_id", "locator").rows() == [
        *ROWS,
        ("c08", "line 8 (byte 424)"),
    ]
    key = ["locator", "error_kind"]
    assert grown[QUARANTINE_PART].sort(key).equals(fresh[QUARANTINE_PART].sort(key))


def test_a_changed_big_file_is_parsed_whole_again_in_parts(tmp_path, monkeypatch):
    write_raw(tmp_path, DATA)
    ingest(tmp_path, monkeypatch, "d", 150)
    old = partitions(tmp_path, "d")
    changed = DATA.replace(b"hello 01", b"hello XX")[:345]  # changed, and shorter
    write_raw(tmp_path, changed)
    report = ingest(tmp_path, monkeypatch, "d", 150)
    assert (report.files_parsed, report.files_appended) == (1, 0)
    collect_bronze_garbage(Layout(tmp_path / "d"), "dialogue")
    now = partitions(tmp_path, "d")
    # 345 bytes: cuts at 115 and 230 → parts at 0, 187, 266 (c05 alone, quarantined)
    assert len(now) == 2 and not set(now) & set(old)
    rows = stored(tmp_path, "d")[TABLE]
    assert rows.select("conversation_id", "locator").rows() == ROWS[:3]
    assert rows["turns"].list.first().struct.field("content").to_list()[0] == "hello XX"


def test_a_file_changed_after_planning_its_parts_is_parsed_whole(tmp_path, monkeypatch):
    write_raw(tmp_path, DATA)
    changed = DATA.replace(b"hello 06", b"hello XX")  # same size, in the last part
    planned = split.plan_split

    def plan_then_change(file, s, size):
        parts = planned(file, s, size)
        write_raw(tmp_path, changed)
        return parts

    monkeypatch.setattr(tasks, "plan_split", plan_then_change)
    report = ingest(tmp_path, monkeypatch, "d", 150)
    assert report.n_bronze == 4
    log = read_log(Layout(tmp_path / "d"), "dialogue").row(0, named=True)
    assert log["fingerprint"] == hashlib.sha256(changed).hexdigest()  # the bytes parsed
    collect_bronze_garbage(Layout(tmp_path / "d"), "dialogue")
    assert len(partitions(tmp_path, "d")) == 1  # parsed whole: one part, no pieces
    contents = stored(tmp_path, "d")[TABLE]["turns"].list.first().struct.field("content")
    assert contents.to_list()[-1] == "hello XX"


DIRTY = Path(__file__).parents[1] / "fixtures" / "dirty"


@pytest.mark.parametrize(
    ("source", "rel_path"),
    [
        ("study", "survey_responses/conversations/all_conversations.jsonl"),
        ("dialogue", "dialogues/support/bad.jsonl"),
        ("dialogue", "feedback/support/bad-events.jsonl"),
        ("oasst", "oasst/en/trees.jsonl"),
        ("hh_rlhf", "hh_rlhf/harmless-base/test.jsonl"),
        ("decision", "decisions/continuum/export.jsonl"),
    ],
)
def test_every_dirty_fixture_parsed_in_parts_equals_its_whole_parse(
    tmp_path, monkeypatch, source, rel_path
):
    path = tmp_path / "raw" / rel_path
    path.parent.mkdir(parents=True)
    path.write_bytes((DIRTY / rel_path).read_bytes())
    tables = [*bronze_models(source), QUARANTINE_PART]
    got = {}
    for root, split_bytes in (("whole", WHOLE), ("parts", 200)):
        monkeypatch.setattr(split, "SPLIT_BYTES", split_bytes)
        ingest_source(source, settings(tmp_path, root), "run")
        layout = Layout(tmp_path / root)
        got[root] = {t: scan_current(layout, source, t, table_schema(t)).collect() for t in tables}
        got[root]["log"] = read_log(layout, source).drop("part_id", "parsed_at")
    pieces = {
        p
        for t in tables
        if got["parts"][t].height
        for p in partitions(tmp_path, "parts", source, t)
    }
    assert len(pieces) > 1  # it was parsed in parts
    for table, frame in got["whole"].items():
        assert frame.equals(got["parts"][table]), table
