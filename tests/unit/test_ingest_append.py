"""A raw file that only grew is ingested by parsing its new tail (pipelines/ingest/append.py), and
the result is that of a fresh ingest of the same bytes; any other change parses the file whole."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.config.settings import Settings
from pipelines.ingest.append import resume_offset
from pipelines.ingest.batches import PARSE_QUARANTINE_SCHEMA, QUARANTINE_PART
from pipelines.ingest.incremental import ingest_source
from pipelines.ingest.log import read_log, scan_current
from pipelines.ingest.reconcile import reconcile_source
from pipelines.schemas import bronze_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.sources.jsonio import split_json_units
from pipelines.storage.layout import Layout

FILE = "dialogues/support/chat.jsonl"
TABLE = "dialogue_conversations"
BOM = b"\xef\xbb\xbf"


def line(n: int) -> bytes:
    """One conversation record of 78 bytes (newline excluded)."""
    return b'{"conversation_id": "c%02d", "turns": [{"role": "user", "content": "hello %02d"}]}' % (
        n,
        n,
    )


def ingest(raw: Path, data_root: Path, run_id: str):
    return ingest_source("dialogue", Settings(raw_root=raw, data_root=data_root), run_id)


def tables(data_root: Path) -> dict[str, pl.DataFrame]:
    """Bronze and quarantine rows as a reader sees them (run ids differ between the roots)."""
    layout = Layout(data_root)
    return {
        TABLE: scan_current(layout, "dialogue", TABLE, bronze_schema(TABLE)).collect(),
        QUARANTINE_PART: scan_current(
            layout, "dialogue", QUARANTINE_PART, PARSE_QUARANTINE_SCHEMA
        ).collect(),
    }


def same_rows(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    columns = [c for c in a.columns if c != "run_id"]
    return a.select(columns).sort("locator").equals(b.select(columns).sort("locator"))


def grow_and_compare(tmp_path: Path, old: bytes, new: bytes):
    """Ingest `old`, write `new`, ingest again; a fresh root ingests `new` once. Returns the second
    ingest's report and both roots' tables."""
    raw = tmp_path / "raw"
    (raw / FILE).parent.mkdir(parents=True)
    (raw / FILE).write_bytes(old)
    ingest(raw, tmp_path / "grown", "run-1")
    (raw / FILE).write_bytes(new)
    report = ingest(raw, tmp_path / "grown", "run-2")
    ingest(raw, tmp_path / "fresh", "run-fresh")
    return report, tables(tmp_path / "grown"), tables(tmp_path / "fresh")


def test_resume_offset_is_the_start_of_the_old_files_last_record():
    data = b'{"a": 1}\n{"b": 2}\n  "c"\n{"d"' + b': 4}\n{"e": 5}\n'
    assert resume_offset(data, 27) == 24  # `{"d"` starts at byte 24; `  "c"` continues `{"b"`
    assert resume_offset(data, 18) == 9  # the old file ended after `"c"`'s newline
    assert resume_offset(data, 8) == 0  # one record only: nothing to keep


def test_units_from_an_offset_count_lines_and_bytes_from_the_files_start():
    data = BOM + b'{"a": 1}\n\n{"b": 2}\n{"c": 3'
    units = list(split_json_units(data, 13))
    assert [(u.line, u.offset, u.data) for u in units] == [
        (3, 13, b'{"b": 2}'),
        (4, 22, b'{"c": 3'),
    ]
    assert units[-1].is_last and not units[0].is_last


_PIECES = st.lists(
    st.sampled_from([b'{"a": 1}', b"[2]", b"  3", b"", b"{", b'"x"', b"\xef\xbb\xbf{}", b"}"]),
    max_size=12,
)


@given(pieces=_PIECES, cut=st.integers(min_value=0, max_value=200))
def test_units_from_the_resume_offset_are_the_full_splits_units_from_there(pieces, cut):
    data = b"\n".join(pieces)
    start = resume_offset(data, min(cut, len(data)))
    whole = [u for u in split_json_units(data) if u.offset >= start]
    assert list(split_json_units(data, start)) == whole
    before = [u for u in split_json_units(data) if u.offset < start]
    assert all(not u.is_last and u.offset + len(u.data) <= start for u in before)


def test_clean_grown_file_parses_only_its_tail_and_equals_a_fresh_ingest(tmp_path):
    old = line(1) + b"\n" + line(2) + b"\n"
    new = old + line(3) + b"\n" + line(4) + b"\n"
    report, grown, fresh = grow_and_compare(tmp_path, old, new)
    assert report.files_appended == 1
    assert same_rows(grown[TABLE], fresh[TABLE])
    assert grown[TABLE]["locator"].sort().to_list() == [
        "line 1 (byte 0)",
        "line 2 (byte 79)",
        "line 3 (byte 158)",
        "line 4 (byte 237)",
    ]
    assert grown[QUARANTINE_PART].height == fresh[QUARANTINE_PART].height == 0


def test_dirty_grown_file_rereads_its_half_written_line_and_equals_a_fresh_ingest(tmp_path):
    # Old file: BOM, two records and the first 30 bytes of the third (a write in progress).
    old = BOM + line(1) + b"\n" + line(2) + b"\n" + line(3)[:30]
    # Grown: the rest of the third record, a malformed record, a fourth record.
    new = BOM + line(1) + b"\n" + line(2) + b"\n" + line(3) + b'\n{"conversation_id": \n'
    new += line(4) + b"\n"
    report, grown, fresh = grow_and_compare(tmp_path, old, new)
    assert report.files_appended == 1
    assert (report.records_read, report.n_bronze, report.n_quarantine) == (5, 4, 1)
    assert same_rows(grown[TABLE], fresh[TABLE])
    assert same_rows(grown[QUARANTINE_PART], fresh[QUARANTINE_PART])
    quarantined = grown[QUARANTINE_PART].row(0, named=True)
    assert (quarantined["locator"], quarantined["error_kind"]) == (
        "line 4 (byte 240)",
        "invalid_json",
    )
    assert grown[TABLE].filter(pl.col("line") == 3)["conversation_id"].to_list() == ["c03"]
    layout = Layout(tmp_path / "grown")
    log = read_log(layout, "dialogue").row(0, named=True)
    assert (log["records_read"], log["n_bronze"], log["n_quarantine"]) == (5, 4, 1)
    assert reconcile_source("dialogue", layout)["balanced"].to_list() == [True]


@pytest.mark.parametrize(
    ("change", "contents"),
    [
        pytest.param(
            lambda old: old.replace(b"hello 01", b"hello XX") + line(4) + b"\n",
            ["hello XX", "hello 02", "hello 03", "hello 04"],
            id="middle_changed_and_grew",
        ),
        pytest.param(
            lambda old: line(7) + b"\n" + line(8) + b"\n",
            ["hello 07", "hello 08"],
            id="shrank",
        ),
    ],
)
def test_file_whose_old_bytes_changed_is_parsed_whole(tmp_path, change, contents):
    old = line(1) + b"\n" + line(2) + b"\n" + line(3) + b"\n"
    report, grown, fresh = grow_and_compare(tmp_path, old, change(old))
    assert report.files_appended == 0 and report.files_parsed == 1
    assert same_rows(grown[TABLE], fresh[TABLE])
    turns = grown[TABLE].sort("line")["turns"]
    assert turns.list.first().struct.field("content").to_list() == contents


DIRTY = Path(__file__).parents[1] / "fixtures" / "dirty"
ACTIVE_SCENARIO = "scenarios/active/SCENARIO-2030-001/moderator_dialog.jsonl"


def all_tables(source: str, data_root: Path) -> dict[str, pl.DataFrame]:
    layout = Layout(data_root)
    schemas = {t: bronze_schema(t) for t in bronze_models(source)}
    schemas[QUARANTINE_PART] = PARSE_QUARANTINE_SCHEMA
    return {t: scan_current(layout, source, t, s).collect() for t, s in schemas.items()}


def grown_in_half(tmp_path: Path, source: str, rel_path: str, new: bytes):
    """Ingest the first half of `new` (cut inside a line), then all of it; and a fresh ingest."""
    raw = tmp_path / "raw"
    (raw / rel_path).parent.mkdir(parents=True)
    (raw / rel_path).write_bytes(new[: len(new) // 2])
    ingest_source(source, Settings(raw_root=raw, data_root=tmp_path / "grown"), "run-1")
    (raw / rel_path).write_bytes(new)
    report = ingest_source(source, Settings(raw_root=raw, data_root=tmp_path / "grown"), "run-2")
    fresh = ingest_source(source, Settings(raw_root=raw, data_root=tmp_path / "fresh"), "run-3")
    return (
        report,
        fresh,
        all_tables(source, tmp_path / "grown"),
        all_tables(source, tmp_path / "fresh"),
    )


@pytest.mark.parametrize(
    ("source", "rel_path"),
    [
        ("dialogue", "dialogues/support/bad.jsonl"),
        ("oasst", "oasst/en/trees.jsonl"),
        ("hh_rlhf", "hh_rlhf/harmless-base/test.jsonl"),
        ("decision", "decisions/continuum/export.jsonl"),
    ],
)
def test_dirty_fixture_grown_from_its_half_equals_a_fresh_ingest(tmp_path, source, rel_path):
    new = (DIRTY / rel_path).read_bytes()
    report, fresh, grown, expected = grown_in_half(tmp_path, source, rel_path, new)
    assert report.files_appended == 1
    counts = ("records_read", "n_bronze", "n_quarantine", "n_pending")
    assert [getattr(report, c) for c in counts] == [getattr(fresh, c) for c in counts]
    for table, rows in expected.items():
        assert same_rows(grown[table], rows), table
    assert reconcile_source(source, Layout(tmp_path / "grown"))["balanced"].all()


def test_sources_whose_rows_depend_on_other_records_parse_a_grown_file_whole(tmp_path):
    entry = (
        '{"timestamp": "2030-01-01T10:0%d:00Z", "scenario_id": "SCENARIO-2030-001", '
        '"phase": "phase_1", "round": 1, "interaction_type": "user_input", '
        '"moderator_message": "Shall we start?", "user_response": "Yes."}\n'
    )
    new = "".join(entry % n for n in range(1, 5)).encode()
    report, _, grown, expected = grown_in_half(tmp_path, "scenario", ACTIVE_SCENARIO, new)
    assert report.files_appended == 0
    entries = grown["scenario_entries"].sort("record_index")
    assert entries["record_index"].to_list() == [0, 1, 2, 3]  # counts the records before it
    assert same_rows(entries, expected["scenario_entries"])


def test_append_killed_before_its_log_leaves_the_old_rows_and_a_rerun_equals_a_fresh_ingest(
    tmp_path,
):
    old = line(1) + b"\n" + line(2)[:40]
    new = line(1) + b"\n" + line(2) + b"\n" + line(3) + b"\n"
    raw = tmp_path / "raw"
    (raw / FILE).parent.mkdir(parents=True)
    (raw / FILE).write_bytes(old)
    ingest(raw, tmp_path / "grown", "run-1")
    (raw / FILE).write_bytes(new)
    script = (
        "import sys; from pathlib import Path; from pipelines.config.settings import Settings; "
        "from pipelines.ingest.incremental import ingest_source; "
        "ingest_source('dialogue', Settings(raw_root=Path(sys.argv[1]), "
        "data_root=Path(sys.argv[2])), 'run-killed')"
    )
    env = {**os.environ, "TURNLAKE_KILL_AT": "ingest:before_log"}
    killed = subprocess.run(
        [sys.executable, "-c", script, str(raw), str(tmp_path / "grown")], env=env, check=False
    )
    assert killed.returncode == -signal.SIGKILL
    after_kill = tables(tmp_path / "grown")
    assert after_kill[TABLE]["locator"].to_list() == ["line 1 (byte 0)"]  # the old file's rows
    assert after_kill[QUARANTINE_PART]["error_kind"].to_list() == ["truncated"]
    report = ingest(raw, tmp_path / "grown", "run-2")
    ingest(raw, tmp_path / "fresh", "run-fresh")
    grown, fresh = tables(tmp_path / "grown"), tables(tmp_path / "fresh")
    assert report.files_appended == 1
    assert (report.records_read, report.n_bronze, report.n_quarantine) == (3, 3, 0)
    assert same_rows(grown[TABLE], fresh[TABLE])
    assert grown[QUARANTINE_PART].height == 0
