"""turnlake's public Python API (also importable as `turnlake`): build the warehouse, look at its
status, cut / verify / pull releases, query the DuckDB views, load a release for a trainer.

    import turnlake

    turnlake.build(data_root="data", demo_if_empty=True)
    ds = turnlake.load_release(config="sft", data_root="data")  # a datasets.DatasetDict
    ds["train"]  # what a TRL trainer takes

Every function takes the roots as keyword arguments (`raw_root`, `data_root`; by default the
settings: `TURNLAKE_RAW_ROOT` / `TURNLAKE_DATA_ROOT`, else `data/raw` and `data`), returns a typed
result and never prints; progress goes to the `turnlake` logger. Failures raise the classes in
`pipelines.api.errors`, all of which the `turnlake` CLI turns into its exit codes.
"""

from pipelines.api.build import build, demo
from pipelines.api.decisions import (
    DecisionFilter,
    ReplaySet,
    compare_replays,
    inspect_decision,
    list_decisions,
    rate_decision,
    replay_decisions,
)
from pipelines.api.diff import diff
from pipelines.api.errors import (  # LeakageError, UntrainableRelease: see __getattr__
    BadPersonaFile,
    BadRatingValue,
    BadRoot,
    BuildFailed,
    DataRootBusy,
    MissingExtra,
    NoRelease,
    NotBuilt,
    PartitionRunsInFlight,
    PublishConflict,
    QueryFailed,
    RawRootMissing,
    ReleaseMismatch,
    SettingsError,
    StoreError,
    TargetExists,
    TurnlakeError,
    UnknownDecision,
    UnknownQuery,
)
from pipelines.api.errors import (
    __getattr__ as __getattr__,
)
from pipelines.api.exports import MinariExport, export_minari
from pipelines.api.loading import load_release
from pipelines.api.privacy import SUBJECT_KINDS, forget, subject_rows
from pipelines.api.query import SavedQuery, query, saved_queries
from pipelines.api.releases import publish, pull, release, releases, verify
from pipelines.api.report import report
from pipelines.api.results import (
    BuildResult,
    FailedCheck,
    ForgetResult,
    LastRun,
    ReleaseState,
    Status,
)
from pipelines.api.roots import dagster_home, resolve_settings
from pipelines.api.status import status
from pipelines.release.card.diff import ReleaseDiff

__all__ = [
    "SUBJECT_KINDS",
    "BadPersonaFile",
    "BadRatingValue",
    "BadRoot",
    "BuildFailed",
    "BuildResult",
    "DataRootBusy",
    "DecisionFilter",
    "FailedCheck",
    "ForgetResult",
    "LastRun",
    "MinariExport",
    "MissingExtra",
    "NoRelease",
    "NotBuilt",
    "PartitionRunsInFlight",
    "PublishConflict",
    "QueryFailed",
    "RawRootMissing",
    "ReleaseDiff",
    "ReleaseMismatch",
    "ReleaseState",
    "ReplaySet",
    "SavedQuery",
    "SettingsError",
    "Status",
    "StoreError",
    "TargetExists",
    "TurnlakeError",
    "UnknownDecision",
    "UnknownQuery",
    "build",
    "compare_replays",
    "dagster_home",
    "demo",
    "diff",
    "export_minari",
    "forget",
    "inspect_decision",
    "list_decisions",
    "load_release",
    "publish",
    "pull",
    "query",
    "rate_decision",
    "release",
    "releases",
    "replay_decisions",
    "report",
    "resolve_settings",
    "saved_queries",
    "status",
    "subject_rows",
    "verify",
]
