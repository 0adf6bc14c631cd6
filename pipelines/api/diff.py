"""`turnlake.diff`: what changed between two releases of a data root."""

from __future__ import annotations

from pipelines.api.errors import NoRelease
from pipelines.api.releases import _exports, _version
from pipelines.api.roots import PathLike
from pipelines.release.card.diff import ReleaseDiff
from pipelines.storage.objects import ObjectRoot
from pipelines.storage.uri import is_remote


def diff(
    old: str | None = None, new: str | None = None, *, data_root: PathLike | None = None
) -> ReleaseDiff:
    """Rows added / removed / changed / moved in per dataset and split (by row identity), groups
    that moved split (`moved_groups`, must be empty), reward and label shift, config, code and
    raw-file changes between release `old` and release `new` (default: the latest, and the
    release before it). Raises `NoRelease` for a version that does not exist or has no predecessor;
    under an S3 data root `ReleaseMismatch` when a downloaded release does not verify."""
    from pipelines.release.card.diff import diff_releases
    from pipelines.release.store.files import complete_releases

    exports = _exports(data_root)
    new_version = _version(ObjectRoot.parse(exports), new)
    known = complete_releases(exports)
    for version in (new_version, old):
        if version is not None and version not in known:
            raise NoRelease(f"no complete release {version!r} under {exports}")
    if old is None:
        earlier = known[: known.index(new_version)]
        if not earlier:
            raise NoRelease(f"release {new_version} has no earlier release to compare with")
        old = earlier[-1]
    if not is_remote(exports):
        return diff_releases(exports, old, new_version)
    from pipelines.api.release_cache import cached_release
    from pipelines.release.card.diff import diff_folders
    from pipelines.release.store.files import read_manifest

    # polars reads a local folder's files here: each release downloaded (and verified) once
    # into the data root's local cache, as `load_release` does
    a, b = (cached_release(exports, v, verify_first=False) for v in (old, new_version))
    return diff_folders(a, b, read_manifest(a), read_manifest(b))
