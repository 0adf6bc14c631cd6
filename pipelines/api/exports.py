"""Exports of a published release into other libraries' formats, written outside the release (a
release is immutable: its files, manifest and content hash stay as published)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipelines.api.errors import BadRoot, MissingExtra, NoRelease, ReleaseMismatch, StoreError
from pipelines.api.roots import PathLike, locked, resolve_settings
from pipelines.config.extras import minari_missing
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot, ObjectStoreError
from pipelines.storage.uri import is_remote


@dataclass(frozen=True)
class MinariExport:
    """What `export_minari` wrote: the folder to set `MINARI_DATASETS_PATH` to, and per Minari
    dataset id its view, split, episodes, steps and texts whose NUL was replaced."""

    version: str
    path: Path  # MINARI_DATASETS_PATH
    datasets: dict[str, dict]


def export_minari(
    version: str | None = None,
    *,
    to: PathLike | None = None,
    data_root: PathLike | None = None,
    wait: float = 0.0,
) -> MinariExport:
    """Write the `rl_steps` episodes of a published release (default: the latest) as Minari
    datasets (ids `turnlake/<view>/<split>-v0`, one per view and split, as `[release] minari`
    puts them in a release) into `<to>/<version>` (default `<data root>/minari/<version>`, which
    `forget` deletes; a copy elsewhere is the user's), replacing what is there, once they read
    back through Minari as the release's rows (the trainability check). Holds the data
    root's lock: a `forget` cannot rewrite the release meanwhile. Raises `NoRelease`, `BadRoot`
    (`to` is not a local folder), `ReleaseMismatch` (its `rl_steps` files differ from its
    manifest, or the datasets written do not match them), `DataRootBusy`, `StoreError`."""
    from pipelines.api.release_cache import cached_release
    from pipelines.release.store.files import MANIFEST
    from pipelines.release.store.minari_files import export_minari as write_export
    from pipelines.release.store.stores import has_release_folder, store_latest
    from pipelines.release.trainability.minari_episodes import minari_problems

    if problem := minari_missing():
        raise MissingExtra(problem)
    if to is not None and is_remote(to):
        raise BadRoot(f"Minari reads local files only: --to {to} must be a folder")
    settings = resolve_settings(data_root=data_root)
    layout = Layout(settings.data_root)
    root = ObjectRoot.parse(str(layout.exports))
    with locked(settings, wait):
        try:
            name = store_latest(root) if version in (None, "latest") else version
            if name is None or not has_release_folder(root, name):
                raise NoRelease(f"no release {version or 'latest'!r} under {root}")
            # an S3 data root's release: a verified copy in its local cache, as load_release reads
            release = cached_release(layout.exports, name, True) if root.is_s3 else root.path / name
        except ObjectStoreError as err:
            raise StoreError(str(err)) from err
        if not (release / MANIFEST).exists():  # a folder without one is not a release
            raise NoRelease(f"no complete release {name!r} under {root}")
        target = Path(to) / name if to is not None else layout.minari_export(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            section = write_export(release, target, check=minari_problems)
        except ValueError as err:
            raise ReleaseMismatch(name, [str(err)]) from err
    return MinariExport(name, target, section["datasets"])
