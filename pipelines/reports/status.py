"""The operator's view: what the warehouse holds, what changed in the raw root since, how fresh."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.ingest.claimed import unrecognised_files
from pipelines.ingest.log import read_log
from pipelines.sources import adapter
from pipelines.sources.base import RawFile
from pipelines.sources.raw_state import one_listing
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout

_CHANGES = pl.Schema({"source": pl.String, "file": pl.String, "change": pl.String})


@dataclass(frozen=True)
class RawStatus:
    changes: pl.DataFrame  # source, file, change (new | changed | missing)
    pending: pl.DataFrame  # source, file, locator
    freshness: pl.DataFrame  # source, files, last_parsed_at, newest_record_at
    unrecognised: list[str] = field(
        default_factory=list
    )  # raw files no adapter claims (never read)


def _sha256(file: RawFile) -> str:
    if file.is_remote:
        return hashlib.sha256(file.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    with file.path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def raw_changes(settings: Settings, source: str) -> list[dict]:
    """Files added, changed or gone since the last ingest; content is hashed only when size
    and mtime cannot tell."""
    log = {
        row["file"]: row
        for row in read_log(Layout(settings.data_root), source).iter_rows(named=True)
    }
    changes = []
    seen = set()
    for file in adapter(source).discover(settings.raw_root):
        seen.add(file.rel_path)
        known = log.get(file.rel_path)
        if known is None or known["missing_since"] is not None:
            changes.append({"source": source, "file": file.rel_path, "change": "new"})
            continue
        size, mtime_ns = file.stat()
        if (size, mtime_ns) == (known["size_bytes"], known["mtime_ns"]):
            continue  # what the ingest trusts as unchanged (an object's stamp has its e-tag)
        modified = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
        if size != known["size_bytes"] or (
            modified > known["parsed_at"] and _sha256(file) != known["fingerprint"]
        ):
            changes.append({"source": source, "file": file.rel_path, "change": "changed"})
    changes += [
        {"source": source, "file": f, "change": "missing"}
        for f, row in log.items()
        if f not in seen and row["missing_since"] is None
    ]
    return changes


def _freshness(layout: Layout) -> pl.DataFrame:
    logs = pl.concat([read_log(layout, s) for s in SOURCES])
    parsed = logs.group_by("source").agg(
        pl.len().alias("files"), pl.col("parsed_at").max().alias("last_parsed_at")
    )
    frame = pl.DataFrame({"source": list(SOURCES)}).join(parsed, on="source", how="left")
    if not stored.exists(layout, "silver", "episodes"):
        return frame.with_columns(newest_record_at=pl.lit(None, pl.Datetime("us", "UTC")))
    episodes = (
        stored.scan(layout, "silver", "episodes")
        .select("episode_id", "source", "started_at", "ended_at")
        .collect()
    )
    turns = stored.scan(layout, "silver", "turns").select("episode_id", "ts").collect()
    newest = (
        episodes.join(
            turns.group_by("episode_id").agg(pl.col("ts").max()), on="episode_id", how="left"
        )
        .group_by("source")
        .agg(
            pl.max_horizontal(
                pl.col("ended_at").max(), pl.col("started_at").max(), pl.col("ts").max()
            ).alias("newest_record_at")
        )
    )
    return frame.join(newest, on="source", how="left")


def raw_status(settings: Settings) -> RawStatus:
    layout = Layout(settings.data_root)
    with one_listing(settings.raw_root):  # on S3: one listing of the root for every source
        changes = [c for source in SOURCES for c in raw_changes(settings, source)]
        unrecognised = unrecognised_files(settings.raw_root)
    logs = pl.concat([read_log(layout, s) for s in SOURCES])
    pending = (
        logs.filter(pl.col("missing_since").is_null())
        .select("source", "file", pl.col("pending_locators").alias("locator"))
        .explode("locator")
        .drop_nulls("locator")
    )
    return RawStatus(
        pl.DataFrame(changes, schema=_CHANGES, orient="row"),
        pending,
        _freshness(layout),
        unrecognised,
    )
