"""The tags that tie a Dagster run to the roots it worked on.

From the project folder every data root shares the project's Dagster instance (`.dagster/`), so
one `dg dev` shows every run; the tags tell them apart: `turnlake status` reads only the runs of
its own data root, and the UI filters by `turnlake/data_root` (Runs → filter by tag).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.config.settings import Settings
from pipelines.storage.uri import is_remote

DATA_ROOT_TAG = "turnlake/data_root"
RAW_ROOT_TAG = "turnlake/raw_root"


def data_root_tag(settings: Settings) -> dict[str, str]:
    """The data root as an absolute path: the same root tags the same way from any folder."""
    return {DATA_ROOT_TAG: _absolute(settings.data_root)}


def run_tags(settings: Settings) -> dict[str, str]:
    """Tags for a run that builds these roots."""
    return {**data_root_tag(settings), RAW_ROOT_TAG: _absolute(settings.raw_root)}


def _absolute(root: Path) -> str:
    return str(root) if is_remote(root) else str(root.resolve())
