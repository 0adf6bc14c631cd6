"""The raw files a silver snapshot was built from, published with it as the silver table
`_raw_inputs` (source, file, fingerprint).

The ingest log says which raw files are current *now* and keeps no history (it is vacuumed with
each ingest), so a release built as of a past time could not name the raw files behind the tables
it read. Published with silver, the list is versioned with the snapshot: `as_of` finds the list of
then, retention and `forget` treat it like every other silver table (a row whose file name mentions
a forgotten subject is erased from every version)."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.ingest.log import read_log
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

RAW_INPUTS = "_raw_inputs"
RAW_INPUTS_SCHEMA = pl.Schema({"source": pl.String, "file": pl.String, "fingerprint": pl.String})


def current_raw_inputs(layout: Layout) -> pl.DataFrame:
    """Every raw file the ingest logs hold rows of now (files gone from the raw root excluded)."""
    logs = [read_log(layout, source) for source in SOURCES]
    return (
        pl.concat(logs)
        .filter(pl.col("missing_since").is_null())
        .select(RAW_INPUTS_SCHEMA.names())
        .sort("source", "file")
    )


def silver_raw_inputs(layout: Layout, as_of: datetime | None = None) -> list[dict] | None:
    """The raw files of the silver snapshot in force (or at `as_of`); None for a snapshot
    published before silver recorded them."""
    if not stored.exists(layout, "silver", RAW_INPUTS, as_of):
        return None
    frame = stored.read(layout, "silver", RAW_INPUTS, as_of)
    return frame.select(RAW_INPUTS_SCHEMA.names()).sort("source", "file").to_dicts()
