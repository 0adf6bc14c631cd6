"""Remove files no published table or view reads any more (run after the views are swapped)."""

from __future__ import annotations

import shutil

from pipelines.config.settings import SOURCES
from pipelines.ingest.log import collect_bronze_garbage
from pipelines.storage import tables
from pipelines.storage.layout import Layout


def collect_garbage(layout: Layout, retention_hours: int = tables.RETENTION_HOURS) -> None:
    """Old bronze parts, Delta files older than the retention (`tables.vacuum`), and generation
    folders of the layout before Delta tables."""
    for source in SOURCES:
        collect_bronze_garbage(layout, source)
    tables.vacuum(layout, retention_hours)
    for path in layout.legacy_generations():
        if path.is_symlink() or path.is_file():
            path.unlink()
        else:
            shutil.rmtree(path)
