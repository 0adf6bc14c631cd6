"""Releases: cut one from what is built, list, verify, pull a copy, load one as a DatasetDict."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipelines.api.errors import NoRelease, NotBuilt, ReleaseMismatch, TargetExists
from pipelines.api.results import ReleaseState
from pipelines.api.roots import PathLike, locked, resolve_settings
from pipelines.storage.layout import Layout

if TYPE_CHECKING:
    from datasets import DatasetDict


_SPLIT_ORDER = {"train": 0, "validation": 1, "test": 2}  # as a DatasetDict usually lists them


def _exports(data_root: PathLike | None) -> Path:
    return Layout(resolve_settings(data_root=data_root).data_root).exports


def release(
    *,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
    wait: float = 0.0,
    as_of: str | datetime | None = None,
) -> ReleaseState | None:
    """Write a release from the current build (the build does this too) and verify it. Identical
    inputs reuse the existing version (`created` False); None when no episode was built.
    `as_of` (an ISO timestamp, naive = UTC, or a datetime): from the silver, gold and splits
    snapshots in force at that time; the manifest's `table_versions` names them.

    Raises `NotBuilt` (no gold tables, none at `as_of`, or their versions were vacuumed),
    `ValueError` (`as_of` is not a timestamp), `DataRootBusy`, `LeakageError` or
    `UntrainableRelease` (refused: nothing published), `ReleaseMismatch` (written, but it does
    not verify).
    """
    from pipelines.release.assemble import make_release
    from pipelines.release.verify import verify_release
    from pipelines.storage import tables as stored

    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    layout = Layout(settings.data_root)
    moment = None if as_of is None else stored.parse_time(as_of)
    if stored.snapshot(layout, "gold", moment) is None:
        when = f" as of {moment.isoformat()}" if moment else " yet"
        raise NotBuilt(f"no gold tables{when}: run `turnlake build` first")
    with locked(settings, wait):
        try:
            outcome = make_release(
                settings, today=datetime.now(UTC).strftime("%Y%m%d"), as_of=moment
            )
        except stored.TableVersionGone as gone:
            raise NotBuilt(f"{gone}; an as-of release needs them") from gone
    if outcome.version is None:
        return None
    problems = verify_release(outcome.path)
    if problems:
        raise ReleaseMismatch(outcome.version, problems)
    return ReleaseState(outcome.version, outcome.path, created=outcome.created)


def releases(*, data_root: PathLike | None = None) -> pl.DataFrame:
    """Complete releases, oldest first: version, created_at, latest, rows per dataset."""
    from pipelines.release.catalog import list_releases

    return list_releases(_exports(data_root))


def _version(exports: Path, version: str | None) -> str:
    """The version asked for ("latest" or None: the newest complete one) if its folder exists;
    an incomplete release (no manifest) is named, for verifying to say so."""
    from pipelines.release.files import latest_release

    if version in (None, "latest"):
        latest = latest_release(exports)
        if latest is None:
            raise NoRelease(f"no releases under {exports}")
        return latest
    if not (exports / version).is_dir():
        raise NoRelease(f"no release {version!r} under {exports}")
    return version


def verify(version: str | None = None, *, data_root: PathLike | None = None) -> ReleaseState:
    """Re-hash every file of a release (default: the latest) against its manifest and re-check
    its row counts and split proof. Raises `NoRelease`, or `ReleaseMismatch` listing problems."""
    from pipelines.release.verify import verify_release

    exports = _exports(data_root)
    name = _version(exports, version)
    problems = verify_release(exports / name)
    if problems:
        raise ReleaseMismatch(name, problems)
    return ReleaseState(name, exports / name)


def pull(version: str, to: PathLike, *, data_root: PathLike | None = None) -> ReleaseState:
    """Copy a release to `<to>/<version>` (a temporary copy, then a rename) and verify the copy.
    Raises `NoRelease`, `TargetExists` (`<to>/<version>` exists), `ReleaseMismatch` (the copy
    does not verify; it is left in place for inspection)."""
    from pipelines.release.catalog import pull_release

    exports = _exports(data_root)
    name = _version(exports, version)
    try:
        target, problems = pull_release(exports, name, Path(to))
    except FileNotFoundError as err:  # the folder holds no manifest: not a complete release
        raise NoRelease(str(err)) from err
    except FileExistsError as err:
        raise TargetExists(str(err)) from err
    if problems:
        raise ReleaseMismatch(name, problems)
    return ReleaseState(name, target)


def load_release(
    version: str = "latest",
    config: str = "sft",
    *,
    data_root: PathLike | None = None,
    verify_first: bool = True,
    cache_dir: PathLike | None = None,
) -> DatasetDict:
    """A release's dataset `config` (sft, preference, kto, rl_steps, decisions, …) as a Hugging
    Face `datasets.DatasetDict` with one split per split in the release's manifest, e.g.
    `load_release()["train"]` for a TRL trainer. The release is verified first unless
    `verify_first` is False; `cache_dir` is passed to `datasets.load_dataset`.

    Needs the `datasets` package (`pip install 'turnlake[datasets]'`). Raises `NoRelease`,
    `ReleaseMismatch`, or `KeyError` for a config the release does not hold.
    """
    try:
        from datasets import load_dataset
    except ImportError as err:
        raise ImportError(
            "load_release needs the `datasets` package: pip install 'turnlake[datasets]' "
            "(or `uv sync --extra datasets`)"
        ) from err
    from pipelines.release.files import read_manifest

    exports = _exports(data_root)
    state = verify(version, data_root=data_root) if verify_first else None
    folder = state.path if state else exports / _version(exports, version)
    counts = read_manifest(folder)["counts"]
    splits = counts.get(config)
    if splits is None:
        known = ", ".join(sorted(counts))
        raise KeyError(f"release {folder.name} has no dataset {config!r}; it has: {known}")
    order = sorted(splits, key=lambda split: (_SPLIT_ORDER.get(split, len(_SPLIT_ORDER)), split))
    data_files = {split: str(folder / config / f"{split}*.parquet") for split in order}
    return load_dataset(
        "parquet", data_files=data_files, cache_dir=str(cache_dir) if cache_dir else None
    )
