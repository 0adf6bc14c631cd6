"""One subject: every row the warehouse holds about it, and forgetting it everywhere."""

from __future__ import annotations

import logging

import polars as pl

from pipelines.api.build import build
from pipelines.api.errors import NotBuilt, PartitionRunsInFlight
from pipelines.api.results import ForgetResult
from pipelines.api.roots import PathLike, locked, require_pseudonym_key, resolve_settings
from pipelines.partitions.store import in_flight
from pipelines.privacy.subjects import SUBJECT_KINDS
from pipelines.storage.layout import Layout

log = logging.getLogger("turnlake")

__all__ = ["SUBJECT_KINDS", "forget", "subject_rows"]


def subject_rows(
    kind: str,
    subject_id: str,
    *,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
) -> dict[str, pl.DataFrame]:
    """Every silver and gold row about one subject (`kind` one of `SUBJECT_KINDS`), per table
    (gold tables as `gold.<table>`); tables holding none map to empty frames.
    Raises `NotBuilt` (no silver yet) or `ValueError` (an unknown kind)."""
    from pipelines.privacy.subjects import subject_rows as rows_about
    from pipelines.schemas.gold import GOLD_MODELS
    from pipelines.schemas.silver import SILVER_MODELS
    from pipelines.storage import tables as stored

    layout = Layout(resolve_settings(raw_root=raw_root, data_root=data_root).data_root)
    if stored.snapshot(layout, "silver") is None:
        raise NotBuilt("no silver tables yet: run `turnlake build` first")
    tables = {t: stored.read(layout, "silver", t) for t in SILVER_MODELS}
    tables |= {
        f"gold.{t}": stored.read(layout, "gold", t)
        for t in GOLD_MODELS
        if stored.exists(layout, "gold", t)
    }
    return rows_about(tables, kind, subject_id)


def forget(
    kind: str,
    subject_id: str,
    *,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
    wait: float = 0.0,
) -> ForgetResult:
    """Forget a subject: record a tombstone (a keyed hash, no id) and a `"forget": true` entry in
    the opt-out registry, rebuild without the subject, and rewrite every existing release without
    its rows (new file hashes, a `deletion_log` in the manifest). Holds the data root throughout.

    Raises `SettingsError` (no usable pseudonym key, `require_pseudonym_key`), `DataRootBusy`,
    `PartitionRunsInFlight` (a `DataRootBusy`: a partition is pending in silver's or gold's
    record; raised before anything is done, or after the rebuild and before anything is erased,
    for a run that began meanwhile), or `BuildFailed` when the rebuild fails (the tombstone is
    recorded; releases are not rewritten). `ForgetResult.problems` lists releases that no longer
    verify.
    """
    from pipelines.privacy.forget import (
        erase_from_tables,
        forgetting,
        mentions_text,
        record_forget,
    )
    from pipelines.privacy.key import pseudonym_key
    from pipelines.privacy.pseudonyms import Pseudonymizer
    from pipelines.release.store.files import complete_releases
    from pipelines.release.store.forget import rewrite_releases
    from pipelines.release.store.verify import verify_release
    from pipelines.sources.base import all_raw_files
    from pipelines.storage.subject_data import delete_caches, purge_files

    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    require_pseudonym_key(settings)  # the tombstone is keyed: nothing recorded without a key
    layout = Layout(settings.data_root)
    exports = layout.exports
    # Every step below handles the holders of one kind in storage/subject_data.py `HOLDERS`.
    with locked(settings, wait), forgetting(layout):
        _refuse_runs_in_flight(in_flight(layout), "nothing was done")
        key, _ = pseudonym_key(settings)
        tombstone = record_forget(settings.raw_root, settings.data_root, kind, subject_id, key)
        log.info("tombstone %s recorded; rebuilding without the subject", tombstone["tombstone_id"])
        rebuilt = build(  # REBUILT: bronze, ingest logs, parse quarantine, views
            raw_root=settings.raw_root, data_root=settings.data_root, log_level="WARNING"
        )
        # a run that marked its partition during the rebuild: its files must not be vacuumed
        _refuse_runs_in_flight(
            in_flight(layout), "the subject is recorded and rebuilt out, nothing erased yet"
        )
        needles = [subject_id, Pseudonymizer(key).pseudonym("person", subject_id)]
        erased = erase_from_tables(layout, needles)  # ERASED: tables and their history
        if erased:  # republished: views must read the new files, the old ones are vacuumed
            from pipelines.warehouse.views import write_views

            log.info("rows still mentioning the subject erased: %s", erased)
            write_views(layout)
        rewritten = rewrite_releases(exports, needles, tombstone)  # REWRITTEN: releases
        deleted = delete_caches(layout)  # DELETED: caches
        log.info("caches deleted: %s", ", ".join(str(p) for p in deleted) or "none")
        purged = purge_files(layout, lambda text: mentions_text(text, needles))  # PURGED
        if purged:
            log.info("build reports mentioning the subject deleted: %s", ", ".join(purged))
    problems = [
        f"{version}: {problem}"
        for version in complete_releases(exports)
        for problem in verify_release(exports / version)
    ]
    raw_files = [
        settings.raw_root / rel
        for rel in all_raw_files(settings.raw_root)
        if mentions_text(rel, [subject_id])
    ]
    return ForgetResult(tombstone["tombstone_id"], rebuilt, rewritten, problems, raw_files)


def _refuse_runs_in_flight(pending: list[str], done: str) -> None:
    """Raise PartitionRunsInFlight when partitions are pending (privacy/forget.py)."""
    if pending:
        raise PartitionRunsInFlight(
            f"partition runs are committing, or stopped before their record: {', '.join(pending)}"
            f" pending ({done}); let the runs finish or run `turnlake build`, which redoes them, "
            "then forget again"
        )
