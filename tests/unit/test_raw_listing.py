"""Listing a local raw tree: the same files as `glob`, folders unchanged since the last walk not
read again, and never a new, rewritten or deleted file missed; the listing kept in the build
record seeds the next process's walks only for the same raw root and engine."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pipelines.config.settings import Settings
from pipelines.ingest.incremental import ingest_source
from pipelines.orchestration import build_record
from pipelines.sources import raw_state
from pipelines.sources.base import find_raw_files
from pipelines.sources.listing import all_local_files, local_matches

TREE = [
    "outputs/run1/meta.json",
    "outputs/run1/round2_social_rl.json",
    "outputs/run1/deeper/meta.json",  # one folder too deep for outputs/*/meta.json
    "outputs/.hidden/meta.json",
    "decisions/a.sqlite",
    "decisions/x/y/b.sqlite",
    "decisions/x/.c.sqlite",
    "decisions/x/notes.txt",
    "other/file.jsonl",
]
PATTERNS = ["outputs/*/meta.json", "outputs/*/round*_social_rl.json", "decisions/**/*.sqlite"]


# The racy window made short here (2 s in the product) so that a test waits past it in 0.3 s, not
# 2.1 s; what is trusted and what is read again does not depend on the window's length.
RACY_NS = 200_000_000
PAST_THE_RACY_WINDOW = 0.3


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Each test starts as a new process would: no listing held."""
    raw_state._LISTINGS.clear()
    monkeypatch.setattr(raw_state, "RACY_NS", RACY_NS)
    yield
    raw_state._LISTINGS.clear()


def _tree(root: Path, files: list[str]) -> Path:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    return root


def test_matches_are_globs_matches_hidden_included(tmp_path):
    root = _tree(tmp_path / "raw", TREE)
    expected = [
        "decisions/a.sqlite",
        "decisions/x/.c.sqlite",
        "decisions/x/y/b.sqlite",
        "outputs/.hidden/meta.json",
        "outputs/run1/meta.json",
        "outputs/run1/round2_social_rl.json",
    ]
    assert local_matches(root, PATTERNS) == expected
    assert local_matches(root, PATTERNS) == expected  # from the listing, the same
    every = [rel for rel in sorted(TREE) if "/." not in rel]
    assert all_local_files(root) == every


def test_a_local_listing_makes_no_path_until_one_is_asked(tmp_path):
    """Planning asks a file's name and stat only (~10 µs saved per file: 136 k at 1 GB); the path
    a worker opens is made when asked, and is the file's."""
    root = _tree(tmp_path / "raw", TREE)
    files = find_raw_files("social_rl", root, PATTERNS)
    assert [f.stat() for f in files] == [
        (len(rel), (root / rel).stat().st_mtime_ns) for rel in (f.rel_path for f in files)
    ]  # each file's text is its relative path
    assert not any("path" in vars(f) for f in files)  # no Path made to stat them
    assert [f.path for f in files] == [root / f.rel_path for f in files]
    assert [f.read_bytes() for f in files] == [f.rel_path.encode() for f in files]


def _count_reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    read = raw_state._read_folder

    def counted(path: str):
        reads.append(path)
        return read(path)

    monkeypatch.setattr(raw_state, "_read_folder", counted)
    return reads


def test_unchanged_folders_are_not_read_again_and_changes_are_never_missed(tmp_path, monkeypatch):
    root = _tree(tmp_path / "raw", TREE)
    time.sleep(PAST_THE_RACY_WINDOW)  # the folders' stamps can be trusted
    local_matches(root, PATTERNS)
    reads = _count_reads(monkeypatch)
    assert len(local_matches(root, PATTERNS)) == 6
    assert reads == []  # every folder stat-ed, none opened
    (root / "decisions/x/y/new.sqlite").write_text("new")  # deep, in an existing folder
    assert "decisions/x/y/new.sqlite" in local_matches(root, PATTERNS)
    assert reads == [str(root / "decisions/x/y")]  # only the folder that changed
    (root / "decisions/x/y/b.sqlite").unlink()
    assert "decisions/x/y/b.sqlite" not in local_matches(root, PATTERNS)
    (root / "decisions/x/z").mkdir()
    (root / "decisions/x/z/c.sqlite").write_text("c")
    assert "decisions/x/z/c.sqlite" in local_matches(root, PATTERNS)


def test_a_folder_whose_mtime_is_put_back_is_still_read_again(tmp_path, monkeypatch):
    root = _tree(tmp_path / "raw", TREE)
    time.sleep(PAST_THE_RACY_WINDOW)
    local_matches(root, PATTERNS)
    folder = root / "decisions/x/y"
    before = os.stat(folder)
    (folder / "late.sqlite").write_text("late")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # as rsync -t / tar do
    assert "decisions/x/y/late.sqlite" in local_matches(root, PATTERNS)


def test_an_ingest_catches_added_rewritten_and_deleted_files_through_the_listing(tmp_path):
    files = {f"survey_responses/conversations/c{i}.json": f'{{"x": {i}}}' for i in range(3)}
    root = tmp_path / "raw"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    time.sleep(PAST_THE_RACY_WINDOW)
    settings = Settings(raw_root=root, data_root=tmp_path / "data")
    assert ingest_source("study", settings, "run-1").files_parsed == 3
    assert ingest_source("study", settings, "run-2").files_parsed == 0
    (root / "survey_responses/conversations/c3.json").write_text('{"x": 3}')
    assert ingest_source("study", settings, "run-3").files_parsed == 1
    time.sleep(0.01)
    (root / "survey_responses/conversations/c0.json").write_text('{"y": 0}')  # in place, same size
    assert ingest_source("study", settings, "run-4").files_parsed == 1
    (root / "survey_responses/conversations/c1.json").unlink()
    report = ingest_source("study", settings, "run-5")
    assert report.files_missing == ["survey_responses/conversations/c1.json"]


def test_every_walk_shares_one_listing_and_a_walk_of_every_folder_replaces_it(
    tmp_path, monkeypatch
):
    root = _tree(tmp_path / "raw", TREE)
    time.sleep(PAST_THE_RACY_WINDOW)
    raw_state.raw_state(root)  # the raw state's walk: every folder, hidden ones included
    reads = _count_reads(monkeypatch)
    assert len(local_matches(root, PATTERNS)) == 6 and len(all_local_files(root)) == 7
    assert reads == []  # a source's walk and the walk skipping hidden files read no folder again
    gone = root / "decisions/x/y"
    (gone / "b.sqlite").unlink()
    gone.rmdir()
    raw_state.raw_state(root)
    assert "decisions/x/y" not in raw_state.kept_listing(root)  # gone from the tree: from it too
    assert "decisions/x" in raw_state.kept_listing(root)


def _recorded(root: Path, data: Path, listing: dict) -> build_record.BuildRecord:
    return build_record.BuildRecord("run", "now", {}, "state", {}, listing)


def test_the_listing_kept_in_the_build_record_seeds_a_new_process_for_its_root_and_engine(
    tmp_path, monkeypatch
):
    root = _tree(tmp_path / "raw", TREE)
    time.sleep(PAST_THE_RACY_WINDOW)
    settings = Settings(raw_root=root, data_root=tmp_path / "data")
    raw_state.raw_state(root)
    record = _recorded(root, tmp_path / "data", build_record.listing_part(settings))
    build_record.write_record(settings.layout, record)
    folders = 9  # by hand: '', outputs (+ run1, run1/deeper, .hidden), decisions (+ x, x/y), other
    assert len(record.listing["folders"]) == folders

    raw_state._LISTINGS.clear()  # a new process: it reads the record
    build_record.seed_from(build_record.read_record(settings.layout), settings)
    reads = _count_reads(monkeypatch)
    assert raw_state.raw_state(root).n_files == len(TREE)
    assert reads == []

    raw_state._LISTINGS.clear()  # another engine: the recorded listing is not trusted
    monkeypatch.setattr(build_record, "engine_digest", lambda: "another-engine-digest")
    build_record.seed_from(build_record.read_record(settings.layout), settings)
    raw_state.raw_state(root)
    assert len(reads) == folders

    raw_state._LISTINGS.clear()  # another raw root (same names): not its listing either
    monkeypatch.undo()
    monkeypatch.setattr(raw_state, "RACY_NS", RACY_NS)
    other = Settings(raw_root=tmp_path / "other", data_root=tmp_path / "data")
    build_record.seed_from(build_record.read_record(settings.layout), other)
    assert raw_state.kept_listing(root) == {} and raw_state.kept_listing(tmp_path / "other") == {}
