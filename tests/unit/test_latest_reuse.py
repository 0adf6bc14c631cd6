"""A build whose release equals an existing one points LATEST at it, even when a later release
exists: LATEST names the release of the data and settings in force (release/plan/latest.py)."""

from __future__ import annotations

from pathlib import Path

import orjson

from pipelines.release.plan.latest import reuse
from pipelines.release.store.files import LATEST, MANIFEST
from pipelines.release.store.stores import repoint_latest
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot

FIRST, LATER = "20261120-aaaaaaaaaa", "20261121-bbbbbbbbbb"


def _exports(data: Path) -> Path:
    exports = Layout(data).exports
    for version, created in (
        (FIRST, "2026-11-20T00:00:00+00:00"),
        (LATER, "2026-11-21T00:00:00+00:00"),
    ):
        (exports / version).mkdir(parents=True)
        manifest = {"version": version, "created_at": created}
        (exports / version / MANIFEST).write_bytes(orjson.dumps(manifest))
    (exports / LATEST).write_text(f"{LATER}\n")
    return exports


def test_a_build_reproducing_an_older_release_makes_it_latest(tmp_path):
    exports = _exports(tmp_path / "data")
    assert reuse(Layout(tmp_path / "data"), FIRST, None) == FIRST
    assert (exports / LATEST).read_text().strip() == FIRST


def test_a_store_latest_is_pointed_back_at_an_older_release(tmp_path):
    exports = _exports(tmp_path / "data")
    repoint_latest(ObjectRoot.parse(str(exports)), FIRST)
    assert (exports / LATEST).read_text().strip() == FIRST
