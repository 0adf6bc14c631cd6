"""`turnlake forget`: after it, no Parquet file under the data root mentions the subject, releases
made before the request are rewritten and verify, and later builds keep the subject out."""

import shutil
from pathlib import Path

import orjson
import polars as pl
import pytest

from pipelines.cli.main import main
from pipelines.release.files import complete_releases, read_manifest
from pipelines.release.verify import verify_release
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

CLEAN = Path(__file__).parents[1] / "fixtures" / "clean"


def parquet_files_mentioning(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*.parquet") if text in pl.read_parquet(p).write_ndjson()]


@pytest.fixture(scope="module")
def forgotten(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("forget")
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    raw, data = tmp_path / "raw", tmp_path / "data"
    shutil.copytree(CLEAN, raw)
    roots = ["--raw-root", str(raw), "--data-root", str(data)]
    assert main(["build", *roots, "--log-level", "ERROR"]) == 0
    participant = (
        stored.read(Layout(data), "silver", "episodes")
        .filter(pl.col("source") == "study")["group_id"]
        .sort()[0]
    )
    assert parquet_files_mentioning(data, participant)
    before = complete_releases(Layout(data).exports)
    assert main(["forget", "participant", participant, *roots]) == 0
    yield raw, data, participant, before, roots
    monkeypatch.undo()


def test_no_parquet_file_under_the_data_root_mentions_a_forgotten_participant(forgotten):
    _, data, participant, _, _ = forgotten
    assert parquet_files_mentioning(data, participant) == []


def test_releases_made_before_forget_are_rewritten_with_a_deletion_log_and_verify(forgotten):
    _, data, _, before, _ = forgotten
    exports = Layout(data).exports
    assert before and set(before) <= set(complete_releases(exports))
    tombstone = orjson.loads(Layout(data).tombstones.read_bytes().splitlines()[-1])
    for version in complete_releases(exports):
        assert verify_release(exports / version) == []
    logs = [read_manifest(exports / v).get("deletion_log", []) for v in before]
    assert all(entry["tombstone_id"] == tombstone["tombstone_id"] for log in logs for entry in log)


def test_tombstone_holds_no_subject_id_and_later_builds_keep_the_subject_out(forgotten):
    _, data, participant, _, roots = forgotten
    assert participant not in Layout(data).tombstones.read_text()
    assert main(["build", *roots, "--log-level", "ERROR"]) == 0
    assert parquet_files_mentioning(data, participant) == []
