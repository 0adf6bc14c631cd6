"""Bronze as Delta tables: the ingest log's commit is the commit point, parts written by a killed
ingest are replaced (never duplicated) and collected, garbage leaves no file holding deleted rows,
and a data root of the layout before (Parquet parts) is parsed again and cleaned."""

from dataclasses import replace
from pathlib import Path

import orjson
import polars as pl
import pytest
from deltalake import DeltaTable

from pipelines.config.settings import Settings
from pipelines.ingest import incremental
from pipelines.ingest.incremental import ingest_source
from pipelines.ingest.log import current_parts, read_log
from pipelines.ingest.reconcile import reconcile_source
from pipelines.storage.layout import Layout
from pipelines.warehouse.garbage import collect_garbage

TABLE = "dialogue_conversations"


def _conversation(cid: str, text: str) -> bytes:
    turns = [{"role": "user", "content": text}, {"role": "assistant", "content": "hi"}]
    return orjson.dumps({"conversation_id": cid, "turns": turns}) + b"\n"


@pytest.fixture
def settings(tmp_path) -> Settings:
    root = tmp_path / "raw" / "dialogues" / "support"
    root.mkdir(parents=True)
    for i in range(5):
        (root / f"c{i}.jsonl").write_bytes(_conversation(f"c-{i}", f"hello {i}"))
    raw = tmp_path / "raw"
    return replace(Settings(raw_root=raw, data_root=tmp_path / "data"), ingest_batch_files=2)


def _rows(layout: Layout) -> pl.DataFrame:
    return pl.read_parquet(current_parts(layout, "dialogue", TABLE))


def _killed_before_log(settings: Settings, monkeypatch, run_id: str) -> None:
    """An ingest that dies after committing its parts, before committing the log."""

    def die(*args, **kwargs):
        raise KeyboardInterrupt("killed before the log commit")

    with monkeypatch.context() as patch:
        patch.setattr(incremental, "write_log", die)
        with pytest.raises(KeyboardInterrupt):
            ingest_source("dialogue", settings, run_id)


def test_parts_of_an_ingest_killed_before_its_log_are_not_read(settings, monkeypatch):
    layout = Layout(settings.data_root)
    ingest_source("dialogue", settings, "run-1")
    victim = Path(settings.raw_root) / "dialogues" / "support" / "c3.jsonl"
    victim.write_bytes(_conversation("c-3", "changed"))
    _killed_before_log(settings, monkeypatch, "run-2")
    rows = _rows(layout)  # the log of run-1 is still in force: its parts, not the new ones
    assert rows.height == 5 and "changed" not in str(rows["turns"].to_list())
    assert set(read_log(layout, "dialogue")["run_id"]) == {"run-1"}


def test_parts_rewritten_after_a_killed_ingest_replace_theirs_instead_of_duplicating(
    settings, monkeypatch
):
    layout = Layout(settings.data_root)
    _killed_before_log(settings, monkeypatch, "run-1")  # parts committed, no log
    assert read_log(layout, "dialogue").height == 0
    report = ingest_source("dialogue", settings, "run-2")
    assert report.files_parsed == 5  # same members → same part ids, written again
    assert sorted(_rows(layout)["conversation_id"].to_list()) == [f"c-{i}" for i in range(5)]
    assert reconcile_source("dialogue", layout)["balanced"].all()


def test_garbage_deletes_unnamed_parts_from_the_delta_table_and_vacuums_them(settings, monkeypatch):
    layout = Layout(settings.data_root)
    ingest_source("dialogue", settings, "run-1")
    victim = Path(settings.raw_root) / "dialogues" / "support" / "c3.jsonl"
    victim.write_bytes(_conversation("c-3", "changed once"))
    _killed_before_log(settings, monkeypatch, "run-2")  # an orphan part
    victim.write_bytes(_conversation("c-3", "changed twice"))
    ingest_source("dialogue", settings, "run-3")  # the part of c-3 in run-1 is replaced
    table = str(layout.bronze_dir(TABLE))
    # run-1: {c0, c1} {c2, c3} {c4}; run-2 (orphan) and run-3: {c2, c3} each, with c3 changed
    assert len(DeltaTable(table).file_uris()) == 5
    collect_garbage(layout)
    current = {str(p) for p in current_parts(layout, "dialogue", TABLE)}
    assert len(current) == 3
    assert set(DeltaTable(table).file_uris()) == current
    on_disk = {str(p) for p in Path(table).rglob("*.parquet") if "_delta_log" not in p.parts}
    assert on_disk == current  # replaced and orphaned parts' files are gone, not just unlisted
    texts = str(_rows(layout)["turns"].to_list())
    assert "changed twice" in texts and "changed once" not in texts


def _files_holding(folder: Path, needle: str) -> list[str]:
    """Every file under `folder` whose bytes, or decoded Parquet rows, hold `needle`."""
    found = []
    for path in (p for p in folder.rglob("*") if p.is_file()):
        decoded = pl.read_parquet(path).write_ndjson() if path.suffix == ".parquet" else ""
        if needle.encode() in path.read_bytes() or needle in decoded:
            found.append(str(path))
    return found


def test_after_forget_and_garbage_no_bronze_file_of_any_version_holds_the_subject(settings):
    layout = Layout(settings.data_root)
    raw = Path(settings.raw_root)
    (raw / "dialogues" / "support" / "c1.jsonl").write_bytes(
        _conversation("c-1", "ask sub-77 about it")
    )
    ingest_source("dialogue", settings, "run-1")
    bronze = layout.warehouse / "bronze"
    assert _files_holding(bronze, "sub-77")
    (raw / "consent").mkdir()
    (raw / "consent" / "optouts.jsonl").write_bytes(
        orjson.dumps({"subject_kind": "actor", "subject_id": "sub-77", "forget": True}) + b"\n"
    )
    ingest_source("dialogue", settings, "run-2")
    collect_garbage(layout)
    assert _files_holding(bronze, "sub-77") == []
    assert _rows(layout).height == 4  # the other conversations stay


def test_a_data_root_of_parquet_parts_is_parsed_again_and_its_old_files_removed(settings):
    layout = Layout(settings.data_root)
    legacy_part = layout.bronze_dir(TABLE) / "0123456789abcdef0123.parquet"
    legacy_quarantine = layout.parse_quarantine_dir("dialogue") / "0123456789abcdef0123.parquet"
    legacy_log = layout.legacy_ingest_log("dialogue")
    for path in (legacy_part, legacy_quarantine, legacy_log):
        path.parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"file": ["dialogues/support/c0.jsonl"]}).write_parquet(path)
    report = ingest_source("dialogue", settings, "run-1")
    assert report.files_parsed == 5
    collect_garbage(layout)
    assert not any(p.exists() for p in (legacy_part, legacy_quarantine, legacy_log))
    assert _rows(layout).height == 5


def test_a_part_commit_fsyncs_its_data_file_and_its_own_commit_file(tmp_path, monkeypatch):
    from pipelines.storage import bronze

    synced: list[str] = []
    monkeypatch.setattr(bronze, "fsync_path", lambda path: synced.append(str(path)))
    table = tmp_path / "t"
    bronze.write_part(str(table), pl.DataFrame({"file": ["a"]}), "p0", None)
    synced.clear()
    bronze.write_part(str(table), pl.DataFrame({"file": ["b"]}), "p1", None)
    (data_file,) = bronze.part_files(str(table), ["p1"], None)
    commits = {str(table / "_delta_log" / f"{v:020d}.json"): v for v in (0, 1)}
    assert data_file in synced
    assert [commits[p] for p in synced if p in commits] == [1]  # its own commit, not the older


def test_a_commit_is_made_durable_without_a_concurrent_writers_staging_files():
    from pipelines.storage.bronze import log_files_committed

    # what a `_delta_log` folder held when a bronze part's commit (version 3, the table at 1
    # before it) was fsynced while other workers were staging a commit (one that will lose the
    # race for version 3, one for version 4) and a new `_last_checkpoint`
    names = [
        "00000000000000000001.json",
        "00000000000000000002.json",
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000003.json",
        "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000004.json#1",
        "00000000000000000003.json#1",
        "_last_checkpoint",
        "_last_checkpoint#2",
        "_commit_1b2c.json.tmp",
    ]
    assert sorted(log_files_committed(names, before=1, after=3)) == [
        "00000000000000000002.checkpoint.parquet",
        "00000000000000000002.json",
        "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000003.json",
        "_last_checkpoint",
    ]
