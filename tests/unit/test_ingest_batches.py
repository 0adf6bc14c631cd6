"""Batched bronze parts: many raw files per part, bounded batches, and every part holding exactly
the files whose log rows name it — also after a file of a shared part changes or vanishes."""

import weakref
from dataclasses import replace
from pathlib import Path

import orjson
import polars as pl
import psutil
import pytest

from pipelines.config.settings import Settings
from pipelines.ingest import batches
from pipelines.ingest.batches import QUARANTINE_PART, Batch, part_files
from pipelines.ingest.incremental import ingest_source
from pipelines.ingest.log import INGEST_LOG_SCHEMA, current_parts, read_log
from pipelines.ingest.reconcile import reconcile_source
from pipelines.ingest.tasks import Written, ingest_workers
from pipelines.runtime import workers
from pipelines.schemas.bronze import bronze_models
from pipelines.sources.base import ParseResult
from pipelines.storage.bronze import part_of
from pipelines.storage.layout import Layout

TABLE = "dialogue_conversations"


def _conversation(cid: str, text: str = "hello") -> bytes:
    return (
        orjson.dumps(
            {
                "conversation_id": cid,
                "turns": [
                    {"role": "user", "content": text},
                    {"role": "assistant", "content": "hi"},
                ],
            }
        )
        + b"\n"
    )


@pytest.fixture
def raw(tmp_path) -> Path:
    root = tmp_path / "raw" / "dialogues" / "support"
    root.mkdir(parents=True)
    for i in range(7):
        (root / f"c{i}.jsonl").write_bytes(_conversation(f"c-{i}"))
    (root / "bad.jsonl").write_bytes(b'{"conversation_id": "x", "turns": [\n')
    return tmp_path / "raw"


def _settings(raw: Path, tmp_path: Path, batch_files: int = 3) -> Settings:
    return replace(
        Settings(raw_root=raw, data_root=tmp_path / "data"), ingest_batch_files=batch_files
    )


def _parts_hold_exactly_their_files(layout: Layout, source: str) -> None:
    log = read_log(layout, source)
    for table in [*bronze_models(source), QUARANTINE_PART]:
        for part in current_parts(layout, source, table):
            named = set(
                log.filter(
                    pl.col("part_id") == part_of(part), pl.col("tables").list.contains(table)
                )["file"]
            )
            assert set(pl.read_parquet(part)["file"]) == named, (table, part.name)


def test_files_are_written_in_bounded_batches_of_parts(raw, tmp_path):
    settings = _settings(raw, tmp_path, batch_files=3)
    report = ingest_source("dialogue", settings, "run-1")
    layout = Layout(settings.data_root)
    assert report.files_parsed == 8
    assert len(current_parts(layout, "dialogue", TABLE)) == 3  # 8 files in batches of 3
    assert report.parts_written == 3
    _parts_hold_exactly_their_files(layout, "dialogue")
    assert reconcile_source("dialogue", layout)["balanced"].all()


def test_changed_file_moves_its_part_mates_into_a_new_part_and_nothing_is_lost(raw, tmp_path):
    settings = _settings(raw, tmp_path)
    ingest_source("dialogue", settings, "run-1")
    layout = Layout(settings.data_root)
    before = pl.read_parquet(current_parts(layout, "dialogue", TABLE)).sort("file")
    (raw / "dialogues" / "support" / "c1.jsonl").write_bytes(_conversation("c-1", "changed text"))
    report = ingest_source("dialogue", settings, "run-2")
    after = pl.read_parquet(current_parts(layout, "dialogue", TABLE)).sort("file")
    assert (report.files_parsed, report.files_moved) == (
        1,
        2,
    )  # c1 re-parsed; c0, c2 shared its part
    assert after.height == before.height
    unchanged = pl.col("file") != "dialogues/support/c1.jsonl"
    assert after.filter(unchanged).equals(before.filter(unchanged))
    assert "changed text" in str(after.filter(~unchanged)["turns"].to_list())
    log = read_log(layout, "dialogue")
    assert set(log.filter(pl.col("run_id") == "run-2")["file"]) == {"dialogues/support/c1.jsonl"}
    _parts_hold_exactly_their_files(layout, "dialogue")
    assert reconcile_source("dialogue", layout)["balanced"].all()


def test_unchanged_rerun_writes_no_part(raw, tmp_path):
    settings = _settings(raw, tmp_path)
    ingest_source("dialogue", settings, "run-1")
    report = ingest_source("dialogue", settings, "run-2")
    assert (report.files_parsed, report.files_moved, report.parts_written) == (0, 0, 0)


def test_removed_file_leaves_its_part_mates_in_a_new_part(raw, tmp_path):
    settings = replace(_settings(raw, tmp_path), remove_deleted_files=True)
    ingest_source("dialogue", settings, "run-1")
    (raw / "dialogues" / "support" / "c4.jsonl").unlink()
    report = ingest_source("dialogue", settings, "run-2")
    layout = Layout(settings.data_root)
    assert report.files_removed == ["dialogues/support/c4.jsonl"] and report.files_moved == 2
    rows = pl.read_parquet(current_parts(layout, "dialogue", TABLE))
    assert "dialogues/support/c4.jsonl" not in set(rows["file"]) and rows.height == 6
    _parts_hold_exactly_their_files(layout, "dialogue")


def test_forgetting_a_subject_purges_the_kept_rows_of_a_vanished_file(raw, tmp_path):
    settings = _settings(raw, tmp_path)
    victim = raw / "dialogues" / "support" / "c5.jsonl"
    victim.write_bytes(_conversation("c-5", "my friend sub-77 said so"))
    ingest_source("dialogue", settings, "run-1")
    victim.unlink()  # vanished: its rows are kept (remove_deleted_files is off)
    (raw / "consent").mkdir()
    (raw / "consent" / "optouts.jsonl").write_bytes(
        orjson.dumps({"subject_kind": "actor", "subject_id": "sub-77", "forget": True}) + b"\n"
    )
    report = ingest_source("dialogue", settings, "run-2")
    layout = Layout(settings.data_root)
    rows = pl.read_parquet(current_parts(layout, "dialogue", TABLE))
    assert "sub-77" not in str(rows.to_dicts())
    assert report.files_missing == ["dialogues/support/c5.jsonl"]
    log = read_log(layout, "dialogue").filter(pl.col("file") == "dialogues/support/c5.jsonl")
    assert log["n_forgotten"].to_list() == [1]
    assert reconcile_source("dialogue", layout)["balanced"].all()


def _log_row(file: str, records: int) -> dict:
    return {
        "file": file,
        "file_id": file,
        "size_bytes": 10,
        "records_read": records,
        "n_bronze": records,
        "n_quarantine": 0,
        "n_pending": 0,
        "pending_locators": [],
    }


@pytest.mark.parametrize("typed_apart", [False, True])
def test_only_the_rows_that_do_not_fit_the_contract_are_quarantined_with_their_raw_text(
    tmp_path, monkeypatch, typed_apart
):
    # Rows as an adapter that missed a 64-bit check would build them: b.jsonl's second record
    # parses but its ordinal does not fit Int64. Before: all of b.jsonl was one `unreadable` row
    # with no raw copy. Now: that record alone, with its line's text; b's first record is bronze.
    # typed_apart: each file's rows are typed as it is added (its raw bytes let go after), not
    # with the batch's, and the misfit is found the same.
    if typed_apart:
        monkeypatch.setattr(batches, "TYPE_EVERY_BYTES", 1)
    layout = Layout(tmp_path)
    batch = Batch("decision", "run-1")
    row = {"locator": "line 1 (byte 0)", "ordinal": 1, "file_kind": "jsonl"}
    batch.add_parsed(
        _log_row("decisions/a.jsonl", 1),
        ParseResult(records_read=1, rows={"decision_records": [{**row, "file": "a"}]}),
    )
    data = b'{"id": "d-1"}\n{"id": "d-2", "sequenceNumber": 9223372036854775808}\n'
    b_rows = [
        {**row, "file": "decisions/b.jsonl"},
        {**row, "file": "decisions/b.jsonl", "locator": "line 2 (byte 14)", "ordinal": 2**63},
    ]
    batch.add_parsed(
        _log_row("decisions/b.jsonl", 2),
        ParseResult(records_read=2, rows={"decision_records": b_rows}),
        data,
    )
    logged = {r["file"]: r for r in batch.write(layout)}["decisions/b.jsonl"]
    assert logged["tables"] == ["decision_records", QUARANTINE_PART]
    counts = [logged[k] for k in ("records_read", "n_bronze", "n_quarantine")]
    assert counts == [2, 1, 1]
    part = [logged["part_id"]]
    bronze = pl.read_parquet(part_files(layout, "decision", "decision_records", part))
    assert bronze.filter(pl.col("file") == "decisions/b.jsonl")["ordinal"].to_list() == [1]
    quarantined = pl.read_parquet(part_files(layout, "decision", QUARANTINE_PART, part))
    assert quarantined.select("locator", "error_kind", "raw").rows() == [
        ("line 2 (byte 14)", "bad_value", data.splitlines()[1].decode())
    ]
    assert "decision_records.ordinal = 9223372036854775808" in quarantined["message"][0]


class _Row(dict):
    """A bronze row whose release a weak reference can see (a plain dict cannot have one)."""


def test_a_batch_lets_go_of_its_parsed_rows_and_gives_them_back_before_writing(
    tmp_path, monkeypatch
):
    batch = Batch("decision", "run-1")
    rows = [
        _Row(file="decisions/a.jsonl", locator=f"line {i}", ordinal=i, file_kind="jsonl")
        for i in range(1, 4)
    ]
    seen = [weakref.ref(row) for row in rows]
    batch.add_parsed(
        _log_row("decisions/a.jsonl", 3),
        ParseResult(records_read=3, rows={"decision_records": rows}),
        b"raw bytes",
    )
    del rows
    events = []
    monkeypatch.setattr(batches, "trim_malloc", lambda: events.append("trim"))
    real_write = batches.bronze.write_part

    def write_part(*args, **kwargs):
        alive = sum(ref() is not None for ref in seen)
        events.append(f"write with {alive} parsed rows alive")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(batches.bronze, "write_part", write_part)
    (logged,) = batch.write(Layout(tmp_path))
    assert events == ["trim", "write with 0 parsed rows alive"]
    written = pl.read_parquet(
        part_files(Layout(tmp_path), "decision", "decision_records", [logged["part_id"]])
    )
    assert written["ordinal"].to_list() == [1, 2, 3]


def test_a_batch_types_the_rows_of_every_few_raw_megabytes_and_lets_go_of_them(
    tmp_path, monkeypatch
):
    # 25 raw bytes between typings: a.jsonl (10) and b.jsonl (10) are still Python rows, c.jsonl
    # (10) makes 30 and all three are typed at once; d.jsonl waits for the write.
    monkeypatch.setattr(batches, "TYPE_EVERY_BYTES", 25)
    batch = Batch("decision", "run-1")
    seen = {}
    for name in "abcd":
        rows = [
            _Row(file=f"decisions/{name}.jsonl", locator=f"line {i}", ordinal=i, file_kind="jsonl")
            for i in (1, 2)
        ]
        seen[name] = [weakref.ref(row) for row in rows]
        batch.add_parsed(
            _log_row(f"decisions/{name}.jsonl", 2),
            ParseResult(records_read=2, rows={"decision_records": rows}),
            b"raw bytes",
        )
        del rows
    alive = {name: sum(ref() is not None for ref in refs) for name, refs in seen.items()}
    assert alive == {"a": 0, "b": 0, "c": 0, "d": 2}
    assert [m.data for m in batch.members] == [None, None, None, b"raw bytes"]
    logged = batch.write(Layout(tmp_path))
    written = pl.read_parquet(
        part_files(Layout(tmp_path), "decision", "decision_records", [logged[0]["part_id"]])
    )
    assert written["file"].to_list() == [f"decisions/{n}.jsonl" for n in "aabbccdd"]
    assert written["ordinal"].to_list() == [1, 2] * 4


def test_the_log_rows_written_are_kept_a_task_at_a_time_as_frames_with_the_tails_counted():
    def row(name: str, part: str, **extra) -> dict:
        return {**_log_row(name, 1), "source": "decision", "part_id": part, **extra}

    written = Written()
    written.add([row("a", "p1", appended=True)])
    written.add([])
    written.add([row("b", "p1", appended=False), row("c", "p2")])
    assert [type(f) for f in written.frames] == [pl.DataFrame, pl.DataFrame]
    assert written.appended == 1
    frame = written.frame()
    assert frame.schema == INGEST_LOG_SCHEMA
    assert frame.select("file", "part_id").rows() == [("a", "p1"), ("b", "p1"), ("c", "p2")]
    assert Written().frame().schema == INGEST_LOG_SCHEMA


def _round(messages: int) -> bytes:
    said = [{"agent_id": "a", "content": f"point {i}"} for i in range(messages)]
    return orjson.dumps({"messages": said}, option=orjson.OPT_INDENT_2)


def test_a_round_number_past_int64_in_a_file_name_quarantines_that_file_with_its_text(tmp_path):
    # A round file without `round_number` takes it from its name; a name past Int64 passes the
    # adapter but not the bronze dtype. Before: `unreadable`, no raw copy; now `bad_value`.
    run = tmp_path / "raw" / "outputs" / "run-a"
    run.mkdir(parents=True)
    (run / "round1_social_rl.json").write_bytes(_round(2))
    huge = "round9223372036854775808_social_rl.json"
    (run / huge).write_bytes(_round(1))
    (run / "meta.json").write_bytes(b'{"experiment_id": "e-1"}')
    settings = _settings(tmp_path / "raw", tmp_path)
    ingest_source("social_rl", settings, "run-1")
    layout = Layout(settings.data_root)
    quarantine = pl.read_parquet(current_parts(layout, "social_rl", QUARANTINE_PART))
    assert quarantine.select("file", "error_kind", "raw").rows() == [
        (f"outputs/run-a/{huge}", "bad_value", _round(1).decode())
    ]
    assert "social_rl_rounds.round_number = 9223372036854775808" in quarantine["message"][0]
    rounds = pl.read_parquet(current_parts(layout, "social_rl", "social_rl_rounds"))
    assert rounds["round_number"].to_list() == [1]
    assert pl.read_parquet(current_parts(layout, "social_rl", "social_rl_meta")).height == 1
    assert reconcile_source("social_rl", layout)["balanced"].all()


def test_parallel_workers_write_the_same_parts_and_log_as_one_process(raw, tmp_path):
    one = _settings(raw, tmp_path / "one", batch_files=2)
    many = replace(_settings(raw, tmp_path / "many", batch_files=2), ingest_workers=2)
    assert ingest_workers(many, 4) == 2 and ingest_workers(one, 4) >= 1
    ingest_source("dialogue", one, "run-1")
    report = ingest_source("dialogue", many, "run-1")
    assert report.parts_written == 4
    columns = ["file", "file_id", "part_id", "tables", "records_read", "n_bronze", "n_quarantine"]
    logs = [read_log(Layout(s.data_root), "dialogue").select(columns) for s in (one, many)]
    assert logs[0].equals(logs[1])
    for table in [TABLE, QUARANTINE_PART]:
        frames = [
            pl.read_parquet(current_parts(Layout(s.data_root), "dialogue", table)).sort("file")
            for s in (one, many)
        ]
        assert frames[0].equals(frames[1])


@pytest.mark.parametrize("workers", [1, 2], ids=["one_process", "worker_processes"])
def test_progress_is_told_the_files_parsed_after_each_batch(raw, tmp_path, workers):
    settings = replace(_settings(raw, tmp_path, batch_files=2), ingest_workers=workers)
    assert ingest_workers(settings, 4) == workers  # 4 batches: the worker path when workers > 1
    told: list[tuple[int, int]] = []
    ingest_source("dialogue", settings, "run-1", lambda done, total: told.append((done, total)))
    assert told == [(2, 8), (4, 8), (6, 8), (8, 8)]  # 8 files in batches of 2
    told.clear()
    ingest_source("dialogue", settings, "run-2", lambda done, total: told.append((done, total)))
    assert told == []  # nothing to parse: nothing to tell


def _pool_workers() -> set[int]:
    """The pool's workers and the forkserver they are forked from."""
    pids = set()
    for child in psutil.Process().children(recursive=True):
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:  # exited (a zombie until it is reaped): not a live worker
            continue
        if "multiprocessing.forkserver" in line:
            pids.add(child.pid)
    return pids


def test_the_parse_workers_exit_once_parsing_is_over(raw, tmp_path, monkeypatch):
    """The parse pool's workers would otherwise hold their memory while the step writes its log
    and runs its checks (and, before the pool's idle time, until the build ends). The forkserver
    they are forked from may stay for the idle time: it holds no parse's memory."""
    monkeypatch.setattr(workers, "IDLE_SECONDS", 600)  # only the end of parsing lets them go
    workers.worker_pool.cache_clear()  # a pool made with this idle time
    before = _pool_workers()
    seen: set[int] = set()
    settings = replace(_settings(raw, tmp_path, batch_files=2), ingest_workers=2)
    try:
        ingest_source("dialogue", settings, "run-1", lambda *_: seen.update(_pool_workers()))
        parse_workers = seen - before - {workers._forkserver_pid()}
        assert parse_workers, "the parse ran in no worker process"
        assert not _pool_workers() & parse_workers, "the parse workers outlived the parse"
    finally:
        workers.worker_pool(2).shutdown()
        workers.worker_pool.cache_clear()
