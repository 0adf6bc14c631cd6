"""What a release is made of: the datasets and everything the manifest and card say about them."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class ReleaseRequest:
    datasets: dict[str, pl.DataFrame]  # each with a `split` column
    proof: dict
    config: dict  # reward rules, split salt and ratios, anything else that shaped the data
    raw_fingerprints: list[dict]  # {"source", "file", "fingerprint"} of every raw file used
    package_version: str
    git_commit: str
    redaction_ledger: dict[str, dict[str, int]] | None = (
        None  # dataset -> kind -> count (no values)
    )
    input_digest: str | None = (
        None  # what it was made from (pipelines/release/inputs.py); not content
    )
    table_versions: dict[str, dict[str, int]] | None = (
        None  # layer -> table -> Delta version read (pipelines/storage/tables.py); not content
    )
    row_batches: dict[str, pl.Series] | None = (
        None  # dataset -> each row's landing batch (tables stored in partitions); not content
    )
    as_of: str | None = None  # built from the tables as of this time (not LATEST); not content
