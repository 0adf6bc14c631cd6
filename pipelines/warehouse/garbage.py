"""Remove files no published table or view reads any more (run after the views are swapped)."""

from __future__ import annotations

import shutil
from datetime import datetime

from pipelines.config.names import SOURCES
from pipelines.config.schema import DEFAULTS
from pipelines.ingest.log import collect_bronze_garbage
from pipelines.release.store.stores import store_manifest, store_releases
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot
from pipelines.storage.retention import Retained, apply_retention


def release_pins(layout: Layout) -> dict[str, list[dict[str, int]]]:
    """Layer → the table versions each release under the data root's exports names (its
    manifest's `table_versions`): retention never removes them."""
    root = ObjectRoot.parse(layout.exports)
    pins: dict[str, list[dict[str, int]]] = {}
    for version in store_releases(root):
        for layer, versions in (store_manifest(root, version).get("table_versions") or {}).items():
            pins.setdefault(layer, []).append(versions)
    return pins


def collect_garbage(
    layout: Layout,
    keep_days: int = DEFAULTS.retention.keep_days,
    now: datetime | None = None,
) -> Retained:
    """Old bronze parts; table history older than `keep_days` (snapshot records and Delta files,
    never what a release names: pipelines/storage/retention.py); generation folders of the layout
    before Delta tables."""
    for source in SOURCES:
        collect_bronze_garbage(layout, source)
    retained = apply_retention(layout, keep_days, release_pins(layout), now)
    for path in layout.legacy_generations():
        if path.is_symlink() or path.is_file():
            path.unlink()
        else:
            shutil.rmtree(path)
    return retained
