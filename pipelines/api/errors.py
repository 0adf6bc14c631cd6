"""What the API raises: one class per way an operation can refuse or fail.

`SettingsError` (a bad turnlake.toml or rewards.toml) and `DataRootBusy` (another build holds the
data root) are raised where they are decided and re-exported here, so a caller catches everything
from `pipelines.api` (or `turnlake`); so are `LeakageError` and `UntrainableRelease` (a release
refused before it was published), on first use (`__getattr__` below).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pipelines.config.settings import SettingsError
from pipelines.storage.lock import DataRootBusy

if TYPE_CHECKING:
    from pipelines.api.results import BuildResult

__all__ = [
    "BadPersonaFile",
    "BadRatingValue",
    "BadRoot",
    "BuildFailed",
    "DataRootBusy",
    "NoRelease",
    "NotBuilt",
    "PartitionRunsInFlight",
    "PublishConflict",
    "QueryFailed",
    "RawRootMissing",
    "ReleaseMismatch",
    "SettingsError",
    "StoreError",
    "TargetExists",
    "TurnlakeError",
    "UnknownDecision",
    "UnknownQuery",
]
# Raised by the release code, which imports pandera and pandas (seconds): loaded on first use so
# that `turnlake --help` and `turnlake sql` start fast. Not in __all__, which would load them.
LAZY_ERRORS = {
    "LeakageError": "pipelines.release.assemble",
    "UntrainableRelease": "pipelines.release.trainability.problems",
}


def __getattr__(name: str) -> type[Exception]:
    if name in LAZY_ERRORS:
        return getattr(importlib.import_module(LAZY_ERRORS[name]), name)
    raise AttributeError(f"pipelines.api has no attribute {name!r}")


class TurnlakeError(Exception):
    """Base class of the errors the API decides itself."""


class RawRootMissing(TurnlakeError):
    """The raw root does not exist (and no demo data was asked for)."""


class NotBuilt(TurnlakeError):
    """What the operation reads (silver, gold, the DuckDB file) has not been built yet."""


class NoRelease(TurnlakeError):
    """No complete release exists under the data root, or not the one asked for."""


class TargetExists(TurnlakeError, FileExistsError):
    """The folder a release would be copied to already exists."""


class BadRoot(TurnlakeError, ValueError):
    """A root or store that is neither a local folder nor s3://bucket/prefix."""


class StoreError(TurnlakeError):
    """The object store (S3 endpoint) refused a request or could not be reached."""


class PartitionRunsInFlight(DataRootBusy):
    """`forget` found partitions pending in silver's or gold's record: a partition run is
    committing them, or one stopped before its record (pipelines/privacy/forget.py). Busy, like
    a held lock (exit 3): a build redoes them, then forget again."""


class PublishConflict(TurnlakeError):
    """Another publisher changed the release store while this one published: LATEST moved, or
    the same version holds another manifest. What this one published is complete and listed."""


class MissingExtra(TurnlakeError):
    """An optional feature asked for whose extra is not installed (the message names it)."""


class BadPersonaFile(TurnlakeError):
    """A replay persona file that is missing, unreadable or holds no system prompt."""


class BadRatingValue(TurnlakeError):
    """A rating outside its scale, or an unknown scale or rater kind."""


class UnknownDecision(TurnlakeError):
    """No decision of the `decision` source has this id in the built tables."""


class UnknownQuery(TurnlakeError):
    """No saved query has this name, or neither / both of SQL and a saved name were given."""


class QueryFailed(TurnlakeError):
    """DuckDB refused the SQL (syntax, unknown column, …); the DuckDB error is the cause."""


class ReleaseMismatch(TurnlakeError):
    """A release's files do not match its manifest or split proof."""

    def __init__(self, version: str, problems: list[str]):
        self.version = version
        self.problems = problems
        super().__init__(f"release {version}: {len(problems)} problems: " + "; ".join(problems[:5]))


class BuildFailed(TurnlakeError):
    """The build ran but a blocking check failed or a step errored; `result` holds the summary
    and the failed checks, as far as the build got."""

    def __init__(self, result: BuildResult):
        self.result = result
        checks = ", ".join(check.name for check in result.failed_checks) or "none"
        super().__init__(f"run {result.run_id} failed; failed blocking checks: {checks}")
