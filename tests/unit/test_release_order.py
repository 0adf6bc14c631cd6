"""The order of complete releases (oldest first, by their manifests' `created_at`) is read from
each manifest once per manifest file, and read again when a manifest is replaced."""

import os

import orjson

from pipelines.release import files
from pipelines.release.files import MANIFEST, complete_releases

OLD, NEW = "20261101-aaaaaaaaaa", "20261102-bbbbbbbbbb"


def _release(exports, version: str, created_at: str) -> None:
    (exports / version).mkdir(parents=True, exist_ok=True)
    tmp = exports / version / "manifest.tmp"
    tmp.write_bytes(orjson.dumps({"created_at": created_at}))
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
