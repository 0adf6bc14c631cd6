"""Hand-made datasets staged as a build stages a release's (pipelines/release/build/staged.py):
each dataset one partition of landing batch 0, so its files are `<split>-b00000-p000.parquet`."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.release.build.staged import BATCH, Source, Staged, stage


def staged(datasets: dict[str, pl.DataFrame], folder: Path) -> Staged:
    """The datasets' files in release order under `folder` (moved into a release by
    `write_release`)."""
    sources = {}
    for name, frame in datasets.items():
        rows = frame.with_columns(pl.lit(0, pl.Int64).alias(BATCH))
        sources[name] = [Source(0, rows.schema, lambda rows=rows: rows)]
    return stage(sources, folder, {})
