"""Releases: cut one from what is built, list, verify, pull a copy, load one as a DatasetDict."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

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
    require_evaluation_sets,
    require_pseudonym_key,
    resolve_settings,
)
from pipelines.config.settings import Settings
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot, ObjectStoreError
from pipelines.storage.uri import is_remote

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict


_SPLIT_ORDER = {"train": 0, "validation": 1, "test": 2}  # as a DatasetDict usually lists them


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

    Raises `SettingsError` (no usable pseudonym key, `require_pseudonym_key`), `NotBuilt` (no
    gold tables, none at `as_of`, or their versions were vacuumed),
    `ValueError` (`as_of` is not a timestamp), `DataRootBusy`, `LeakageError` or
    `UntrainableRelease` (refused: nothing published), `ReleaseMismatch` (written, but it does
    not verify).
    """
    from pipelines.release.assemble import make_release
    from pipelines.release.store.verify import verify_release
    from pipelines.storage import tables as stored

    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    require_pseudonym_key(settings)
    require_evaluation_sets(settings)
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


def load_release(
    version: str = "latest",
    config: str = "sft",
    *,
    data_root: PathLike | None = None,
    verify_first: bool = True,
    cache_dir: PathLike | None = None,
) -> DatasetDict:
    """A release's dataset `config` (sft, preference, kto, rl_steps, decisions, …, or the OpenAI
    files' `openai_sft` / `openai_preference`) as a Hugging
    Face `datasets.DatasetDict` with one split per split in the release's manifest, e.g.
    `load_release()["train"]` for a TRL trainer; a split without rows is a `Dataset` of 0 rows
    with the dataset's features. The release is verified first unless
    `verify_first` is False; `cache_dir` is passed to `datasets.load_dataset`. Under an S3 data
    root the release is downloaded once into the root's local cache (`TURNLAKE_CACHE_DIR`) and
    verified there; the copy is reused while its manifest matches the stored one.

    Needs the `datasets` package (`pip install 'turnlake[datasets]'`). Raises `NoRelease`,
    `ReleaseMismatch`, or `KeyError` for a config the release does not hold.
    """
    try:
        from datasets import DatasetDict, load_dataset
    except ImportError as err:
        raise ImportError(
            "load_release needs the `datasets` package: pip install 'turnlake[datasets]' "
            "(or `uv sync --extra datasets`)"
        ) from err
    from pipelines.release.store.files import read_manifest

    exports = _exports(data_root)  # datasets reads local files: the exports, not a store
    if is_remote(exports):  # an S3 data root: a verified copy in its local cache
        from pipelines.api.release_cache import cached_release

        with _store_errors():
            name = _version(ObjectRoot.parse(str(exports)), version)
            folder = cached_release(exports, name, verify_first)
    else:
        state = verify(version, data_root=data_root, store=exports) if verify_first else None
        folder = state.path if state else exports / _version(ObjectRoot.parse(exports), version)
    manifest = read_manifest(folder)
    openai = manifest.get("openai") or {}  # JSONL configs: release/store/openai_files.py
    if config in openai:
        return _load_openai(folder / openai[config]["path"], openai[config]["counts"], cache_dir)
    counts = manifest["counts"]
    profiles = manifest.get("profiles") or {}  # profile configs: release/card/profiles.py
    splits = counts.get(config) or (profiles.get(config) or {}).get("counts")
    if splits is None:
        known = ", ".join(sorted(counts) + sorted(profiles) + sorted(openai))
        raise KeyError(f"release {folder.name} has no dataset {config!r}; it has: {known}")
    path = profiles[config]["path"] if config in profiles else config
    order = _in_split_order(splits)
    data_files = {split: str(folder / path / f"{split}*.parquet") for split in order}
    # `datasets` cannot materialize a split of 0 rows (its reader raises): an empty split is
    # built from its file's columns instead, so every split of the release is there
    full = {split: files for split, files in data_files.items() if splits[split]}
    cache = str(cache_dir) if cache_dir else None
    loaded = load_dataset("parquet", data_files=full, cache_dir=cache) if full else {}
    return DatasetDict(
        {
            split: loaded[split] if split in full else _empty_split(data_files[split])
            for split in order
        }
    )


def _in_split_order(splits: Iterable[str]) -> list[str]:
    """Train, validation, test first, then any other split by name."""
    return sorted(splits, key=lambda split: (_SPLIT_ORDER.get(split, len(_SPLIT_ORDER)), split))


def _load_openai(folder: Path, counts: dict[str, int], cache_dir: PathLike | None) -> DatasetDict:
    """An OpenAI JSONL config, by its folder's own card (release/card/openai.py: `datasets` reads
    one file format per card), a split without lines as 0 rows of the card's features."""
    from datasets import Dataset, DatasetDict, load_dataset, load_dataset_builder

    cache = str(cache_dir) if cache_dir else None
    loaded = load_dataset(str(folder), cache_dir=cache) if any(counts.values()) else {}
    features = load_dataset_builder(str(folder), cache_dir=cache).info.features
    order = _in_split_order(counts)
    empty = features.arrow_schema.empty_table()
    return DatasetDict({s: loaded[s] if counts[s] else Dataset(empty) for s in order})


def _empty_split(pattern: str) -> Dataset:
    """A split of 0 rows with the features of its (empty) Parquet file."""
    import pyarrow.parquet as pq
    from datasets import Dataset

    schema = pq.read_schema(min(Path(pattern).parent.glob(Path(pattern).name)))
    return Dataset(schema.empty_table())
