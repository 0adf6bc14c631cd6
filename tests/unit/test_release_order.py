"""The order of complete releases (oldest first, by their manifests' `created_at`) and their rows
per dataset and split (`counts`, for the build report) are read from each manifest once per
manifest file, and read again when a manifest is replaced."""

import os

import orjson

from pipelines.release.store import files
from pipelines.release.store.files import MANIFEST, complete_releases, manifest_counts

OLD, NEW = "20261101-aaaaaaaaaa", "20261102-bbbbbbbbbb"


def _release(exports, version: str, created_at: str, counts: dict | None = None) -> None:
    (exports / version).mkdir(parents=True, exist_ok=True)
    tmp = exports / version / "manifest.tmp"
    manifest = {"created_at": created_at, "files": ["big"] * 3}
    tmp.write_bytes(orjson.dumps(manifest if counts is None else {**manifest, "counts": counts}))
    os.replace(tmp, exports / version / MANIFEST)  # as a release is published: a new file


def test_releases_are_ordered_without_parsing_a_manifest_read_before(tmp_path, monkeypatch):
    _release(tmp_path, OLD, "2026-11-01T00:00:00")
    _release(tmp_path, NEW, "2026-11-02T00:00:00")
    assert complete_releases(tmp_path) == [OLD, NEW]

    def refuse(_release):
        raise AssertionError("a manifest was parsed again")

    monkeypatch.setattr(files, "read_manifest", refuse)
    assert complete_releases(tmp_path) == [OLD, NEW]


def test_a_replaced_manifest_is_read_again(tmp_path):
    _release(tmp_path, OLD, "2026-11-01T00:00:00")
    _release(tmp_path, NEW, "2026-11-02T00:00:00")
    assert complete_releases(tmp_path) == [OLD, NEW]
    _release(tmp_path, OLD, "2026-11-03T00:00:00")  # now the newest
    assert complete_releases(tmp_path) == [NEW, OLD]


def test_the_counts_of_releases_once_ordered_are_answered_without_parsing(tmp_path, monkeypatch):
    _release(tmp_path, OLD, "2026-11-01T00:00:00", {"sft": {"train": 3, "test": 1}})
    _release(tmp_path, NEW, "2026-11-02T00:00:00", {"sft": {"train": 4}})
    assert complete_releases(tmp_path) == [OLD, NEW]

    def refuse(_release):
        raise AssertionError("a manifest was parsed again")

    monkeypatch.setattr(files, "read_manifest", refuse)
    assert manifest_counts(tmp_path / OLD) == {"sft": {"train": 3, "test": 1}}
    assert manifest_counts(tmp_path / NEW) == {"sft": {"train": 4}}


def test_a_replaced_manifest_gives_its_new_counts(tmp_path):
    _release(tmp_path, NEW, "2026-11-02T00:00:00", {"sft": {"train": 4}})
    counts = manifest_counts(tmp_path / NEW)
    counts["sft"]["train"] = 99  # a caller's change is its own, not the next caller's
    assert manifest_counts(tmp_path / NEW) == {"sft": {"train": 4}}
    _release(tmp_path, NEW, "2026-11-02T00:00:00", {"sft": {"train": 5, "validation": 2}})
    assert manifest_counts(tmp_path / NEW) == {"sft": {"train": 5, "validation": 2}}
