"""What the API returns: plain frozen dataclasses, printed by the CLI, read by callers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from pipelines.reports.status import RawStatus
    from pipelines.reports.summary import BuildSummary


@dataclass(frozen=True)
class FailedCheck:
    """One asset check that did not pass in a build run."""

    asset: str  # asset key as a user string, e.g. "silver_turns"
    check: str  # check name, e.g. "turns_matches_contract"
    blocking: bool  # severity ERROR: the build fails; WARN: reported only
    description: str | None = None

    @property
    def name(self) -> str:
        return f"{self.asset}:{self.check}"


@dataclass(frozen=True)
class ReleaseState:
    """A release in a store and what verifying it found (no problems: it verifies)."""

    version: str
    path: Path | str  # a local folder, or the release's s3:// URI in an S3 store
    problems: list[str] = field(default_factory=list)
    verified_in_run: bool = False  # this run's `release_verifies` check passed on it
    created: bool = False  # `release()` only: written now, not an identical earlier one
    published: str | None = None  # where `[release] store` (or `publish`) holds a verified copy

    @property
    def verified(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class BuildResult:
    """What `build()` did: the Dagster run, failed checks, the summary, the latest release."""

    run_id: str
    run_ok: bool  # every step of the Dagster run succeeded
    raw_root: Path
    failed_checks: list[FailedCheck]
    summary: BuildSummary
    warehouse: Path  # the DuckDB file
    latest_release: ReleaseState | None  # None: no release, or the run failed
    nothing_to_release: bool  # no episode was built, so no release was written
    demo_written: bool = False  # the raw root was empty and demo data was written into it
    report: Path | None = None  # the run's HTML build report (None: it could not be written)
    unchanged_since: str | None = None  # no run: nothing changed since this build (fast path)

    @property
    def ok(self) -> bool:
        return self.run_ok and not any(check.blocking for check in self.failed_checks)


@dataclass(frozen=True)
class LastRun:
    """The newest run of a data root recorded in the Dagster instance."""

    run_id: str
    job_name: str
    status: str
    started: datetime | None
    ended: datetime | None


@dataclass(frozen=True)
class Status:
    """`status()`: the last run, raw changes since, quarantine and health of what is published."""

    dagster_home: Path
    raw_root: Path
    data_root: Path
    last_run: LastRun | None  # the newest run of this data root
    raw: RawStatus
    quarantine: pl.DataFrame  # source, stage, error_kind, n
    problems: list[str]  # published tables or views that do not read back

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class ForgetResult:
    """`forget()`: the tombstone, the rebuild, releases rewritten, raw files to erase."""

    tombstone_id: str
    build: BuildResult
    rewritten: dict[str, int]  # release version -> rows removed
    problems: list[str]  # "<version>: <problem>" for every release that no longer verifies
    raw_files: list[Path]  # raw files named after the subject, to erase at the source
