"""`build()`'s no-change fast path: when nothing a build reads has changed since the last fully
successful build of the data root, and the data root is as that build left it, a new build would
change nothing; `build()` then answers from the record that build left
(pipelines/orchestration/build_record.py) without launching a Dagster run. Any doubt means a normal
run."""

from __future__ import annotations

import base64
import io
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.api.results import BuildResult, ReleaseState
from pipelines.config.settings import Settings
from pipelines.orchestration import build_record as records
from pipelines.runtime.collector import cyclic_gc_paused
from pipelines.storage.layout import Layout

log = logging.getLogger("turnlake")

KILL_ENV = "TURNLAKE_KILL_AT"  # a crash test's build must run to reach its crash point
_FRAMES = (
    "table_rows",
    "reconciliation",
    "quarantine",
    "pending",
    "missing",
    "release_rows",
    "split_balance",
)


@dataclass(frozen=True)
class Decision:
    """What `decide` found: the record matched (nothing to do), or why a build runs; the inputs
    are recorded after the run when it fully succeeds (None: nothing will be recorded)."""

    matched: records.BuildRecord | None = None
    reasons: list[str] = field(default_factory=list)
    inputs: dict[str, str] | None = None
    raw_files: tuple[str, ...] | None = None  # every raw file when the state was taken, sorted


def _must_run(settings: Settings, *, force: bool, revalidate: bool, workers: int) -> str | None:
    """Why this build runs whatever the record says (None: the record may decide)."""
    from pipelines.checks.revalidate import revalidate_requested

    if force:
        return "--force"
    if revalidate or revalidate_requested():
        return "re-validation asked"
    if workers > 1:
        return "--workers"
    if settings.layout.is_remote:
        return "the data root is on object storage"
    if settings.ingest_rehash_unchanged:
        return "[ingest] rehash_unchanged"
    if os.environ.get(KILL_ENV):
        return KILL_ENV
    return None


def decide(
    settings: Settings, params: dict[str, Any], force: bool, revalidate: bool, workers: int
) -> Decision:
    """Take the inputs' digests now and compare them, and the data root's state, with the record
    of the last fully successful build."""
    # loading the record's listing (tens of thousands of small lists) set off full collections
    # over the modules already loaded (Dagster, Pandera): 0.29 s instead of 0.004 s at 100 MB
    with cyclic_gc_paused():
        return _decide(settings, params, force, revalidate, workers)


def _decide(
    settings: Settings, params: dict[str, Any], force: bool, revalidate: bool, workers: int
) -> Decision:
    from pipelines.sources.raw_state import raw_state

    reason = _must_run(settings, force=force, revalidate=revalidate, workers=workers)
    if settings.layout.is_remote:
        return Decision(reasons=[reason or ""])
    record = records.read_record(settings.layout)
    records.seed_from(record, settings)  # the walk reads only the folders whose stamps moved
    raw = raw_state(settings.raw_root)
    inputs = records.input_parts(settings, raw, params)
    if raw.racy:  # recorded, its stamps could not tell a later change from this state
        reasons = [reason or "raw files changed in the last seconds"]
        return Decision(reasons=reasons, raw_files=raw.files)
    if reason is not None:  # a forced build that fully succeeds is recorded all the same
        return Decision(reasons=[reason], inputs=inputs, raw_files=raw.files)
    if record is None:
        reasons = ["no record of a fully successful build"]
        return Decision(reasons=reasons, inputs=inputs, raw_files=raw.files)
    changed = record.differences(inputs, records.data_root_state(settings.layout))
    if changed:
        reasons = [f"{', '.join(changed)} changed"]
        return Decision(reasons=reasons, inputs=inputs, raw_files=raw.files)
    return Decision(matched=record, inputs=inputs)


# ---------------------------------------------------------------- the record's outcome


def _frame_text(frame: Any) -> str:
    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    return base64.b64encode(buffer.getvalue()).decode()


def _frame_of(text: str) -> Any:
    import polars as pl

    return pl.read_ipc(io.BytesIO(base64.b64decode(text)))


def _outcome(result: BuildResult) -> dict[str, Any]:
    summary = result.summary
    latest = result.latest_release
    return {
        "frames": {name: _frame_text(getattr(summary, name)) for name in _FRAMES},
        "withheld": summary.withheld,
        "unrecognised": summary.unrecognised,
        "split_warnings": summary.split_warnings,
        "release": None
        if latest is None
        else {"version": latest.version, "path": str(latest.path)},
        "nothing_to_release": result.nothing_to_release,
        "warehouse": str(result.warehouse),
        "report": None if result.report is None else str(result.report),
    }


def record_build(
    settings: Settings, decision: Decision, run_id: str, state: str | None, result: BuildResult
) -> None:
    """Write the record of a build that fully succeeded: no failed check at all (warnings
    included), a verified latest release, inputs taken before and the data root state after."""
    latest = result.latest_release
    if decision.inputs is None or state is None or not result.ok or result.failed_checks:
        return
    if latest is not None and not latest.verified:
        return
    inputs = dict(decision.inputs)
    if inputs["pseudonym key"] == records.NO_KEY:  # the key this build generated and used
        inputs["pseudonym key"] = records.pseudonym_key_digest(settings)
    finished = datetime.now(UTC).isoformat(timespec="seconds")
    listing = records.listing_part(settings)  # as this build's walks left it
    record = records.BuildRecord(run_id, finished, inputs, state, _outcome(result), listing)
    records.write_record(settings.layout, record)


def unchanged_result(settings: Settings, record: records.BuildRecord) -> BuildResult:
    """The result the recorded build printed, read back from its record."""
    from pipelines.reports.summary import BuildSummary

    outcome = record.outcome
    frames = {name: _frame_of(text) for name, text in outcome["frames"].items()}
    summary = BuildSummary(
        **frames,
        withheld=outcome["withheld"],
        unrecognised=outcome["unrecognised"],
        split_warnings=outcome.get("split_warnings", []),
    )
    release = outcome["release"]
    latest = None if release is None else ReleaseState(release["version"], Path(release["path"]))
    report = Path(outcome["report"]) if outcome["report"] else None
    return BuildResult(
        run_id=record.run_id,
        run_ok=True,
        raw_root=settings.raw_root,
        failed_checks=[],
        summary=summary,
        warehouse=Path(outcome["warehouse"]),
        latest_release=latest,
        nothing_to_release=outcome["nothing_to_release"],
        report=report if report is not None and report.exists() else None,
        unchanged_since=f"{record.run_id} (finished {record.finished_at})",
    )


def start_run(settings: Settings, decision: Decision) -> None:
    """Say why the build runs, and remove the record: until this run fully succeeds (and
    records itself), nothing may match the data root's last record."""
    log.info("building: %s", "; ".join(decision.reasons))
    records.drop_record(Layout(settings.data_root))
