"""Incremental, idempotent ingest: unchanged files reused, changed files re-parsed, vanished
files reported (and dropped only by setting), pending tails counted once when complete."""

import shutil
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from pipelines.config.settings import Settings
from pipelines.ingest.batches import QUARANTINE_PART
from pipelines.ingest.incremental import ingest_source
from pipelines.ingest.log import current_parts, read_log
from pipelines.ingest.reconcile import reconcile_source
from pipelines.storage.layout import Layout

FIXTURES = Path(__file__).parents[1] / "fixtures" / "clean"
ACTIVE = "scenarios/active/SCENARIO-2030-001/moderator_dialog.jsonl"
ENTRY = (
    '{"timestamp": "2030-01-01T10:0%d:00Z", "scenario_id": "SCENARIO-2030-001", "phase": '
    '"phase_1", '
    '"round": 1, "interaction_type": "user_input", "moderator_message": "Shall we start?", '
    '"user_response": "Yes, go ahead."}'
)


@pytest.fixture
def raw(tmp_path) -> Path:
    root = tmp_path / "raw"
    shutil.copytree(FIXTURES / "survey_responses", root / "survey_responses")
    return root


def test_second_ingest_of_unchanged_files_parses_nothing(raw, tmp_path):
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    first = ingest_source("study", settings, "run-1")
    second = ingest_source("study", settings, "run-2")
    assert first.files_parsed == first.files_seen > 0
    assert second.files_parsed == 0 and second.files_reused == first.files_seen
    assert set(read_log(Layout(settings.data_root), "study")["run_id"]) == {"run-1"}


def test_appended_file_is_reparsed_and_replaces_its_previous_part(raw, tmp_path):
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    master = raw / "survey_responses" / "conversations" / "all_conversations.jsonl"
    ingest_source("study", settings, "run-1")
    layout = Layout(settings.data_root)
    before = current_parts(layout, "study", "study_sessions")
    lines = master.read_bytes().splitlines(keepends=True)
    master.write_bytes(
        b"".join(lines) + lines[0].replace(b'"session_id": "', b'"session_id": "copy-')
    )
    report = ingest_source("study", settings, "run-2")
    after = current_parts(layout, "study", "study_sessions")
    assert report.files_parsed == 1
    assert len(after) == len(before) and after != before
    assert reconcile_source("study", layout)["balanced"].all()


def test_vanished_file_is_reported_and_its_rows_kept_by_default(raw, tmp_path):
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    ingest_source("study", settings, "run-1")
    victim = next((raw / "survey_responses" / "exits").glob("*.json"))
    victim.unlink()
    report = ingest_source("study", settings, "run-2")
    assert report.files_missing == [victim.relative_to(raw).as_posix()]
    log = read_log(Layout(settings.data_root), "study")
    assert (
        log.filter(pl.col("missing_since").is_not_null())["file"].to_list() == report.files_missing
    )


def test_vanished_file_rows_are_dropped_when_configured(raw, tmp_path):
    settings = replace(
        Settings(raw_root=raw, data_root=tmp_path / "data"), remove_deleted_files=True
    )
    ingest_source("study", settings, "run-1")
    victim = next((raw / "survey_responses" / "exits").glob("*.json"))
    victim.unlink()
    report = ingest_source("study", settings, "run-2")
    assert report.files_removed == [victim.relative_to(raw).as_posix()]
    assert (
        victim.relative_to(raw).as_posix()
        not in read_log(Layout(settings.data_root), "study")["file"].to_list()
    )


def test_pending_tail_is_retried_and_counted_once_when_complete(tmp_path):
    raw = tmp_path / "raw"
    path = raw / ACTIVE
    path.parent.mkdir(parents=True)
    path.write_text(ENTRY % 1 + "\n" + (ENTRY % 2)[:60])
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    layout = Layout(settings.data_root)
    first = ingest_source("scenario", settings, "run-1")
    assert (first.records_read, first.n_pending, first.n_quarantine) == (1, 1, 0)
    path.write_text(ENTRY % 1 + "\n" + ENTRY % 2 + "\n")
    second = ingest_source("scenario", settings, "run-2")
    assert (second.records_read, second.n_bronze, second.n_pending) == (2, 2, 0)
    assert current_parts(layout, "scenario", QUARANTINE_PART) == []
    rows = pl.read_parquet(current_parts(layout, "scenario", "scenario_entries"))
    assert rows.height == 2


def test_parts_the_log_no_longer_names_stay_until_garbage_collection(raw, tmp_path):
    from pipelines.warehouse.garbage import collect_garbage

    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    layout = Layout(settings.data_root)
    ingest_source("study", settings, "run-1")
    old = set(current_parts(layout, "study", "study_sessions"))
    master = raw / "survey_responses" / "conversations" / "all_conversations.jsonl"
    master.write_bytes(master.read_bytes() + b"\n")
    ingest_source("study", settings, "run-2")
    stale = old - set(current_parts(layout, "study", "study_sessions"))
    assert stale and all(p.exists() for p in stale)  # old views may still read them
    collect_garbage(layout)
    assert not any(p.exists() for p in stale)


def test_file_with_unchanged_size_and_mtime_is_not_reread_unless_rehash_is_set(raw, tmp_path):
    import os

    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    ingest_source("study", settings, "run-1")
    victim = next((raw / "survey_responses" / "exits").glob("*.json"))
    stat = victim.stat()
    data = victim.read_bytes()
    victim.write_bytes(data.replace(b"e", b"E", 1))  # same size, different bytes …
    os.utime(victim, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # … and the old modification time
    assert ingest_source("study", settings, "run-2").files_parsed == 0  # trusted, like rsync / git
    rehash = replace(settings, ingest_rehash_unchanged=True)
    assert ingest_source("study", rehash, "run-3").files_parsed == 1


def test_touched_file_is_rehashed_not_reparsed_and_then_takes_the_fast_path(raw, tmp_path):
    import os

    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    ingest_source("study", settings, "run-1")
    victim = next((raw / "survey_responses" / "exits").glob("*.json"))
    os.utime(victim, ns=(victim.stat().st_atime_ns, victim.stat().st_mtime_ns + 10**9))
    assert ingest_source("study", settings, "run-2").files_parsed == 0
    log = read_log(Layout(settings.data_root), "study")
    row = log.filter(pl.col("file") == victim.relative_to(raw).as_posix()).row(0, named=True)
    assert row["mtime_ns"] == victim.stat().st_mtime_ns and row["run_id"] == "run-1"


def test_unchanged_ingest_commits_no_new_log_version(raw, tmp_path):
    from deltalake import DeltaTable

    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    ingest_source("study", settings, "run-1")
    log_table = str(Layout(settings.data_root).ingest_log("study"))
    before = DeltaTable(log_table).version()
    ingest_source("study", settings, "run-2")
    assert DeltaTable(log_table).version() == before
    victim = next((raw / "survey_responses" / "exits").glob("*.json"))
    victim.unlink()  # newly missing: the log must record it
    ingest_source("study", settings, "run-3")
    assert DeltaTable(log_table).version() == before + 1


def test_planning_reads_only_files_it_must_fingerprint(raw, tmp_path, monkeypatch):
    import os

    import pipelines.ingest.incremental as ingest_module

    planned_reads: list[str] = []
    real = ingest_module.read_raw
    monkeypatch.setattr(
        ingest_module,
        "read_raw",
        lambda file, s: planned_reads.append(file.rel_path) or real(file, s),
    )
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")
    assert ingest_source("study", settings, "run-1").files_parsed > 0
    assert planned_reads == []  # new files are parsed anyway: read once, by the parser
    victim = next((raw / "survey_responses" / "exits").glob("*.json"))
    os.utime(victim, ns=(victim.stat().st_atime_ns, victim.stat().st_mtime_ns + 10**9))
    ingest_source("study", settings, "run-2")
    assert planned_reads == [
        victim.relative_to(raw).as_posix()
    ]  # touched: hashed to see if it changed


def test_an_ingest_with_nothing_to_change_reports_the_logged_counts(tmp_path):
    """The counts come from the log, read or rewritten: a file of two bad records (by hand: one
    line not JSON, one cut short) reports them on every ingest, parsed, reused or missing."""
    raw = tmp_path / "raw"
    (raw / "dialogues").mkdir(parents=True)
    (raw / "dialogues" / "x.jsonl").write_bytes(b'not json\n{"cut')
    settings = Settings(raw_root=raw, data_root=tmp_path / "data")

    def counts(run: str) -> tuple[int, int, int, int, int]:
        report = ingest_source("dialogue", settings, run)
        return (
            report.files_parsed,
            report.records_read,
            report.n_bronze,
            report.n_quarantine,
            len(report.files_missing),
        )

    assert counts("run-1") == (1, 2, 0, 2, 0)
    assert counts("run-2") == (0, 2, 0, 2, 0)  # unchanged: the log as read
    (raw / "dialogues" / "x.jsonl").unlink()
    assert counts("run-3") == (0, 2, 0, 2, 1)  # newly missing: the log rewritten
    assert counts("run-4") == (0, 2, 0, 2, 1)  # still missing: the log as read
