"""Releases: cut one from what is built, list, verify, pull a copy, load one as a DatasetDict."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipelines.api.errors import (
    BadRoot,
    NoRelease,
    NotBuilt,
    PublishConflict,
    ReleaseMismatch,
    StoreError,
    TargetExists,
)
from pipelines.api.results import ReleaseState
from pipelines.api.roots import (
    PathLike,
    locked,
    require_release_inputs,
    resolve_settings,
)
from pipelines.config.settings import Settings
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot, ObjectStoreError


def _exports(data_root: PathLike | None) -> Path:
    return Layout(resolve_settings(data_root=data_root).data_root).exports


def _root(uri: PathLike) -> ObjectRoot:
    try:
        return ObjectRoot.parse(uri)
    except ObjectStoreError as err:
        raise BadRoot(str(err)) from None


def _store(data_root: PathLike | None, store: PathLike | None) -> ObjectRoot:
    """The release store asked for: `store`, else `[release] store`, else the local exports."""
    settings = resolve_settings(data_root=data_root)
    chosen = store or settings.release_store
    return _root(chosen) if chosen else ObjectRoot.parse(Layout(settings.data_root).exports)


@contextmanager
def _store_errors() -> Iterator[None]:
    """The object store's failures as the API's errors."""
    from pipelines.release.store.stores import PublishConflict as StoreConflict

    try:
        yield
    except ObjectStoreError as err:
        raise StoreError(str(err)) from err
    except StoreConflict as err:
        raise PublishConflict(str(err)) from err


def _location(root: ObjectRoot, version: str) -> Path | str:
    return root.join(version).uri if root.is_s3 else root.path / version


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

    Raises `SettingsError` (no usable pseudonym key or evaluation set, `require_release_inputs`),
    `NotBuilt` (no gold tables, none at `as_of`, or their versions were vacuumed),
    `ValueError` (`as_of` is not a timestamp), `DataRootBusy`, `LeakageError` or
    `UntrainableRelease` (refused: nothing published), `ReleaseMismatch` (written, but it does
    not verify).
    """
    from pipelines.release.assemble import make_release
    from pipelines.release.store.verify import verify_release
    from pipelines.storage import tables as stored

    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    require_release_inputs(settings)
    layout = Layout(settings.data_root)
    moment = None if as_of is None else stored.parse_time(as_of)
    then = stored.snapshot(layout, "gold", moment)
    if then is None:
        when = f" as of {moment.isoformat()}" if moment else " yet"
        raise NotBuilt(f"no gold tables{when}: run `turnlake build` first")
    if not then.versions:  # a record standing for history that retention removed
        raise NotBuilt(
            f"no gold tables as of {moment.isoformat() if moment else 'now'}: that history is "
            "older than `[retention] keep_days` and no kept release names it"
        )
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
    return ReleaseState(
        outcome.version,
        outcome.path,
        created=outcome.created,
        published=publish_to_store(settings, outcome.version),
    )


def publish_to_store(settings: Settings, version: str) -> str | None:
    """Publish the local release `version` to `[release] store` when one is set (and is not the
    exports folder itself); returns where it is there. Raises `PublishConflict`, `StoreError`."""
    if not settings.release_store:
        return None
    exports = Layout(settings.data_root).exports
    target = _root(settings.release_store)
    if not target.is_s3 and target.path.resolve() == exports.resolve():
        return None
    return publish(version, data_root=settings.data_root, store=exports, to=target.uri).published


def releases(*, data_root: PathLike | None = None, store: PathLike | None = None) -> pl.DataFrame:
    """Complete releases in the store (`store`, else `[release] store`, else the local exports),
    oldest first: version, created_at, latest, rows per dataset."""
    from pipelines.release.store.catalog import list_releases

    with _store_errors():
        return list_releases(_store(data_root, store))


def _version(root: ObjectRoot, version: str | None) -> str:
    """The version asked for ("latest" or None: the newest complete one) if any object of it
    exists; an incomplete release (no manifest) is named, for verifying to say so."""
    from pipelines.release.store.stores import has_release_folder, store_latest

    if version in (None, "latest"):
        latest = store_latest(root)
        if latest is None:
            raise NoRelease(f"no releases under {root}")
        return latest
    if not has_release_folder(root, version):
        raise NoRelease(f"no release {version!r} under {root}")
    return version


def verify(
    version: str | None = None,
    *,
    data_root: PathLike | None = None,
    store: PathLike | None = None,
) -> ReleaseState:
    """Re-hash every file of a release (default: the latest) against its manifest and re-check
    its row counts and split proof, in the store (`store`, else `[release] store`, else the local
    exports; on S3 through a temporary download). Raises `NoRelease`, `ReleaseMismatch` listing
    problems, `StoreError`."""
    from pipelines.release.store.stores import verify_stored

    root = _store(data_root, store)
    with _store_errors():
        name = _version(root, version)
        problems = verify_stored(root, name)
    if problems:
        raise ReleaseMismatch(name, problems)
    return ReleaseState(name, _location(root, name))


def pull(
    version: str,
    to: PathLike,
    *,
    data_root: PathLike | None = None,
    store: PathLike | None = None,
) -> ReleaseState:
    """Copy a release (`latest`: the newest) from the store (`store`, else `[release] store`, else
    the local exports) to `to`, and verify the copy. A folder gets `<to>/<version>` (a temporary
    copy, then a rename); `s3://bucket/prefix` gets the release published as `publish` does.
    Raises `NoRelease`, `TargetExists` (`<to>/<version>` exists), `ReleaseMismatch` (the copy
    does not verify; a folder copy is left in place for inspection), `BadRoot`, `StoreError`,
    `PublishConflict`."""
    from pipelines.release.store.stores import pull_to_folder

    target = _root(to)
    if target.is_s3:
        return publish(version, data_root=data_root, store=store, to=target.uri)
    root = _store(data_root, store)
    with _store_errors():
        name = _version(root, version)
        try:
            path, problems = pull_to_folder(root, name, target.path)
        except FileNotFoundError as err:  # the folder holds no manifest: not a complete release
            raise NoRelease(str(err)) from err
        except FileExistsError as err:
            raise TargetExists(str(err)) from err
    if problems:
        raise ReleaseMismatch(name, problems)
    return ReleaseState(name, path)


def publish(
    version: str | None = None,
    *,
    to: PathLike,
    data_root: PathLike | None = None,
    store: PathLike | None = None,
) -> ReleaseState:
    """Publish a verified copy of a release (default: the latest) from the store it is in to the
    store `to` (a folder or s3://bucket/prefix): its files, then its manifest (put-if-absent),
    then `LATEST` (compare-and-swap, only forward). Publishing what is already there changes
    nothing. Raises `NoRelease`, `ReleaseMismatch` (the source or the stored copy does not
    verify: nothing made visible), `PublishConflict` (another publisher moved `LATEST`; this
    release is complete there), `BadRoot`, `StoreError`."""
    from pipelines.release.store.fetch import fetch_release
    from pipelines.release.store.stores import publish_release, store_releases

    source, target = _store(data_root, store), _root(to)
    with _store_errors():
        name = _version(source, version)
        if name not in store_releases(source):
            raise NoRelease(f"no complete release {name!r} under {source}")
        try:
            if not source.is_s3:
                done = publish_release(source.path / name, target)
            else:
                with tempfile.TemporaryDirectory(prefix="turnlake-publish-") as tmp:
                    fetch_release(source, name, Path(tmp) / name)
                    done = publish_release(Path(tmp) / name, target)
        except ValueError as err:
            raise ReleaseMismatch(name, [str(err)]) from err
    return ReleaseState(
        name, _location(target, name), created=done.created, published=done.location
    )
