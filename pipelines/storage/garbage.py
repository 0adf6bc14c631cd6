"""Remove files no published table or view reads any more (run after the views are swapped)."""

from __future__ import annotations

from pipelines.config.settings import SOURCES
from pipelines.ingest.log import collect_bronze_garbage
from pipelines.storage.files import remove_old_generations
from pipelines.storage.layout import Layout


def collect_garbage(layout: Layout) -> None:
    for source in SOURCES:
        collect_bronze_garbage(layout, source)
    remove_old_generations(layout.silver_link)
    remove_old_generations(layout.gold_link)
    remove_old_generations(layout.splits_link)
