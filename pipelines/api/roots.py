"""Where an API call works: the settings with its roots, the pseudonym key a writing call needs,
the Dagster home, the data root lock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.config.settings import Settings, SettingsError, settings_from_env
from pipelines.storage.lock import data_root_lock
from pipelines.storage.uri import as_root

PathLike = str | os.PathLike[str]


def resolve_settings(
    *, raw_root: PathLike | None = None, data_root: PathLike | None = None
) -> Settings:
    """The settings (turnlake.toml or `TURNLAKE_CONFIG`, validated) with the roots given here.

    A root left out comes from `TURNLAKE_RAW_ROOT` / `TURNLAKE_DATA_ROOT`, else the defaults
    `data/raw` and `data`; a data root given without a raw root (and no `TURNLAKE_RAW_ROOT`) takes
    `<data root>/raw`. Raises `SettingsError` when the file holds an unknown key or a bad value.
    """
    settings = settings_from_env()
    if data_root and not raw_root and "TURNLAKE_RAW_ROOT" not in os.environ:
        raw_root = as_root(data_root) / "raw"
    return settings.with_roots(raw_root or None, data_root or None)


def require_pseudonym_key(settings: Settings) -> None:
    """Raise `SettingsError` (exit 2) when a release under `settings` would have no usable
    pseudonym key: a configured one that cannot be read, or none on an S3 data root (where none
    is generated: pipelines/privacy/key.py). Asked by build, release and forget before they do
    any work, not after a whole build."""
    from pipelines.privacy.key import key_problem

    problem = key_problem(settings)
    if problem is not None:
        raise SettingsError("[privacy] pseudonym key", [problem])


def require_release_inputs(settings: Settings) -> None:
    """Raise `SettingsError` (exit 2) when a release under `settings` could not be made: no usable
    pseudonym key (`require_pseudonym_key`), or an evaluation set of `[release] decontaminate`
    that cannot be read. Asked by build and release before any work."""
    from pipelines.release.privatize.decontaminated import eval_sets

    require_pseudonym_key(settings)
    eval_sets(settings)


def dagster_home(settings: Settings) -> Path:
    """`DAGSTER_HOME` if set; else the project root when run from it (its dagster.yaml keeps runs
    in SQLite under .dagster/); else `<data root>/.dagster`. Created when missing."""
    if "DAGSTER_HOME" in os.environ:
        return Path(os.environ["DAGSTER_HOME"])
    home = Path.cwd() if (Path.cwd() / "dagster.yaml").exists() else settings.layout.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    return home.resolve()


@contextmanager
def locked(settings: Settings, wait: float) -> Iterator[None]:
    """Hold the data root's writer lock, waiting up to `wait` seconds; raises `DataRootBusy`."""
    with data_root_lock(settings.layout, wait=wait):
        yield
