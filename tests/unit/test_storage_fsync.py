"""Publishing survives a power loss: the file is fsynced before its rename, then its folder.

No strace here: `os.fsync` is wrapped (the real one still runs) to record which paths it flushed.
"""

import os
from pathlib import Path

import polars as pl
import pytest

from pipelines.storage import durable, tables
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.layout import Layout


@pytest.fixture
def fsynced(monkeypatch) -> list[Path]:
    """Paths `os.fsync` was called on, in order (resolved from the descriptor)."""
    calls: list[Path] = []
    real = os.fsync

    def recording(fd):
        calls.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        return real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return calls


def test_an_atomic_write_fsyncs_the_file_before_its_rename_and_then_its_folder(tmp_path, fsynced):
    target = tmp_path / "table.bin"
    write_bytes_atomic(target, b"rows")
    assert [p.parent for p in fsynced] == [tmp_path, tmp_path.parent]
    assert fsynced[0].name.startswith(".table.bin.")  # the temporary file, before the rename
    assert fsynced[1] == tmp_path


def test_a_snapshot_publish_fsyncs_the_snapshot_log_and_then_its_folder_last(tmp_path, fsynced):
    layout = Layout(tmp_path)
    tables.publish(layout, "silver", {"t": pl.DataFrame({"a": [1]})}, {"inputs": "x"})
    log = layout.snapshot_log("silver")
    assert fsynced[-1] == log.parent  # after the rename that makes the snapshot current
    assert fsynced[-2].name.startswith(f".{log.name}.")  # the new log, before its rename


def test_a_release_is_fsynced_whole_before_its_rename_and_the_rename_after(tmp_path, fsynced):
    from pipelines.release.write import content_hash, write_release
    from tests.unit.test_release_files import request, sft

    exports = tmp_path / "exports"
    req = request(sft([("train", "g1", "a"), ("test", "g2", "b")]), tmp_path / "stage")
    release = write_release(exports, "20261121-0000000000", content_hash(req), req)
    renamed = fsynced.index(exports)  # first fsync of exports/ comes right after the rename
    tmp = exports / f".tmp-20261121-0000000000-{os.getpid()}"
    assert all(p.is_relative_to(tmp) for p in fsynced[:renamed])
    flushed = {p.relative_to(tmp) for p in fsynced[:renamed]}
    written = {p.relative_to(release) for p in release.rglob("*")}
    assert written | {Path(".")} <= flushed  # every file and folder, under its temporary name
    assert fsynced[-1] == exports  # then LATEST, written atomically


def test_fsync_tree_flushes_every_file_and_folder(tmp_path, fsynced):
    (tmp_path / "sft").mkdir()
    (tmp_path / "sft" / "train.parquet").write_bytes(b"x")
    (tmp_path / "manifest.json").write_bytes(b"{}")
    durable.fsync_tree(tmp_path)
    assert set(fsynced) == {
        tmp_path,
        tmp_path / "sft",
        tmp_path / "sft" / "train.parquet",
        tmp_path / "manifest.json",
    }
    assert fsynced[-1] == tmp_path
