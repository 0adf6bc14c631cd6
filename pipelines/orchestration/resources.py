"""The one resource that says where data lives; everything else derives paths from it."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipelines.config.settings import Settings, settings_from_config
from pipelines.storage.lock import join_run_lease
from pipelines.storage.uri import as_root

RUN_LEASE_TAG = "turnlake/run_lease"  # the data-root lease token of a multiprocess run


class TurnlakeResource(dg.ConfigurableResource):
    """Raw (landing) root and data root. Defaults come from TURNLAKE_RAW_ROOT /
    TURNLAKE_DATA_ROOT."""

    raw_root: str
    data_root: str
    config_path: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> TurnlakeResource:
        return cls(
            raw_root=str(settings.raw_root),
            data_root=str(settings.data_root),
            config_path=str(settings.config_path) if settings.config_path else None,
        )

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """A step of a run holding the data-root lease (`turnlake build --workers N`) writes
        under that lease instead of waiting for its own run to give the lock back."""
        run = context.dagster_run
        join_run_lease(run.tags.get(RUN_LEASE_TAG) if run is not None else None)

    def settings(self) -> Settings:
        config = Path(self.config_path) if self.config_path else None
        raw_root, data_root = as_root(self.raw_root), as_root(self.data_root)
        return settings_from_config(raw_root, data_root, config)
