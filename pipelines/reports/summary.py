"""What a build produced, for the operator: rows per table, quarantine, pending tails, balance."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import orjson
import polars as pl

from pipelines.config.names import SOURCES
from pipelines.config.settings import Settings
from pipelines.ingest.claimed import unrecognised_files
from pipelines.ingest.log import read_log
from pipelines.ingest.reconcile import reconcile_source, reconciliation_totals
from pipelines.schemas.silver import SILVER_MODELS
from pipelines.splits.balance import BALANCE_SCHEMA, balance_warnings, empty_balance
from pipelines.storage import delta_cache
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.storage.uri import as_root
from pipelines.transforms.build import WITHHELD


@dataclass(frozen=True)
class BuildSummary:
    table_rows: pl.DataFrame  # table, rows
    reconciliation: (
        pl.DataFrame
    )  # source, files, records_read, bronze_rows, quarantine_rows, pending, balanced
    quarantine: pl.DataFrame  # source, stage, error_kind, n
    pending: pl.DataFrame  # source, file, locator
    missing: pl.DataFrame  # source, file, missing_since: raw files that vanished (rows kept)
    withheld: dict[str, int]  # silver rows withheld per table for opted-out subjects (counts only)
    unrecognised: list[str] = field(
        default_factory=list
    )  # raw files no adapter claims (never read)
    release_rows: pl.DataFrame = field(
        default_factory=lambda: release_rows_of(None)
    )  # dataset, split, rows of the latest release
    split_balance: pl.DataFrame = field(
        default_factory=empty_balance
    )  # source, split, episodes, share, largest group: the saved query `split_balance`
    split_warnings: list[str] = field(
        default_factory=list
    )  # sources whose realized split shares are far from the configured ratios


_RECONCILIATION = pl.Schema(
    {
        "source": pl.String,
        "files": pl.Int64,
        "records_read": pl.Int64,
        "bronze_rows": pl.Int64,
        "quarantine_rows": pl.Int64,
        "pending": pl.Int64,
        "balanced": pl.Boolean,
    }
)


def _reconciliation_row(source: str, totals: Mapping[str, int]) -> dict[str, object]:
    """A source's row from its `reconciliation_totals` (also its `nothing_lost` check's
    metadata)."""
    return {
        "source": source,
        "files": totals["files"],
        "records_read": totals["records_read"],
        "bronze_rows": totals["bronze_rows"],
        "quarantine_rows": totals["quarantine_rows"],
        "pending": totals["n_pending"],
        "balanced": totals["unbalanced_files"] == 0,
    }


def _reconciliation(
    layout: Layout, checked: Mapping[str, Mapping[str, int]] | None = None
) -> pl.DataFrame:
    """Per source: files, records read, bronze and quarantined rows, pending records, balanced.

    A source whose `nothing_lost` check judged the data as it stands (`checked`: its metadata,
    from this build's run) is taken from it rather than reconciled a second time."""
    checked = checked or {}
    rows = [
        _reconciliation_row(source, checked[source])
        if source in checked
        else _reconciliation_row(source, reconciliation_totals(reconcile_source(source, layout)))
        for source in SOURCES
    ]
    return pl.DataFrame(rows, schema=_RECONCILIATION, orient="row")


def release_rows_of(manifest: dict | None) -> pl.DataFrame:
    """dataset, split, rows of a release manifest (no release: no rows)."""
    from pipelines.reports.numbers import release_contents

    return release_contents(manifest or {})


def _latest_release_rows(layout: Layout) -> pl.DataFrame:
    from pipelines.release.store.files import latest_release, manifest_counts

    version = latest_release(layout.exports)
    return release_rows_of(
        {"counts": manifest_counts(layout.release(version))} if version else None
    )


def build_summary(
    settings: Settings,
    checked: Mapping[str, Mapping[str, int]] | None = None,
    raw_files: Sequence[str] | None = None,
) -> BuildSummary:
    """The summary of the data root as it stands; `checked` holds, per source, the metadata of
    the `nothing_lost` check a build just judged on this data (its reconciliation, not done
    again); `raw_files`, every raw file as the build listed them (None: the tree is listed)."""
    # Read after the build has let its lock go: every ingest log and bronze table is opened
    # once here, not once per read (each source's log ~6 times), as `turnlake status` does.
    with delta_cache.reading():
        return _summary(settings, Layout(settings.data_root), checked, raw_files)


def _summary(
    settings: Settings,
    layout: Layout,
    checked: Mapping[str, Mapping[str, int]] | None,
    raw_files: Sequence[str] | None,
) -> BuildSummary:
    rows = [
        {
            "table": table,
            "rows": stored.rows(layout, "silver", table),
        }
        for table in SILVER_MODELS
        if stored.exists(layout, "silver", table)
    ]
    table_rows = pl.DataFrame(rows, schema={"table": pl.String, "rows": pl.Int64}, orient="row")
    reconciliation = _reconciliation(layout, checked)
    quarantine = (
        stored.read(layout, "silver", "quarantine")
        if stored.exists(layout, "silver", "quarantine")
        else None
    )
    by_kind = (
        quarantine.group_by("source", "stage", "error_kind")
        .agg(pl.len().cast(pl.Int64).alias("n"))
        .sort("source", "stage", "error_kind")
        if quarantine is not None
        else pl.DataFrame(
            schema={"source": pl.String, "stage": pl.String, "error_kind": pl.String, "n": pl.Int64}
        )
    )
    logs = pl.concat([read_log(layout, s) for s in SOURCES])
    missing = logs.filter(pl.col("missing_since").is_not_null()).select(
        "source", "file", "missing_since"
    )
    pending = (
        logs.filter(pl.col("missing_since").is_null())
        .select("source", "file", pl.col("pending_locators").alias("locator"))
        .explode("locator")
        .drop_nulls("locator")
    )
    marker = stored.meta(layout, "silver", WITHHELD)
    withheld = orjson.loads(marker) if marker else {}
    balance = _split_balance(layout)
    return BuildSummary(
        table_rows,
        reconciliation,
        by_kind,
        pending,
        missing,
        withheld,
        unrecognised_files(settings.raw_root, raw_files),
        _latest_release_rows(layout),
        balance,
        balance_warnings(balance, settings.splits.ratios),
    )


def _split_balance(layout: Layout) -> pl.DataFrame:
    """The saved query `split_balance` over the views; empty before the first build."""
    from pipelines.warehouse.queries import saved_queries
    from pipelines.warehouse.views import query

    if not layout.duckdb.exists():
        return empty_balance()
    try:
        frame = query(layout, saved_queries()["split_balance"].sql)
    except duckdb.Error:  # views of a build that published no splits yet
        return empty_balance()
    return frame.cast(BALANCE_SCHEMA) if frame.height else empty_balance()


def unrecognised_lines(files: list[str], raw_root: Path, examples: int = 3) -> list[str]:
    """`not recognised: N files under <folder> (e.g. …)`, one line per top-level folder of the
    raw root."""
    by_folder: dict[str, list[str]] = defaultdict(list)
    for rel in files:
        by_folder[rel.split("/", 1)[0] if "/" in rel else "."].append(rel)
    lines = []
    for folder, members in sorted(by_folder.items()):
        shown = ", ".join(members[:examples]) + (", …" if len(members) > examples else "")
        noun = "file" if len(members) == 1 else "files"
        where = as_root(raw_root) / folder if folder != "." else raw_root
        lines.append(f"not recognised: {len(members)} {noun} under {where} (e.g. {shown})")
    return lines
