"""A release under an S3 data root as a local folder, for the readers that need files
(`datasets.load_dataset`): downloaded once into the root's local cache and verified there."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipelines.api.errors import NoRelease, ReleaseMismatch
from pipelines.release.store.files import MANIFEST
from pipelines.storage import objects
from pipelines.storage.layout import Layout
from pipelines.storage.objects import ObjectRoot


def cached_release(exports: Path, version: str, verify_first: bool) -> Path:
    """`<cache>/releases/<version>` holding the stored release `version` (resolved, not
    `latest`). Reused while its manifest is byte-identical to the stored one: `forget` rewrites
    a release in place, and a stale copy would still hold the subject. Raises `NoRelease`,
    `ReleaseMismatch` (the download, or the cached copy when `verify_first`, does not verify)."""
    from pipelines.release.store.stores import pull_to_folder
    from pipelines.release.store.verify import verify_release

    root = ObjectRoot.parse(str(exports))
    copy = Layout(exports.parent).downloaded_release(version)  # `exports` is a Layout's
    folder = copy.parent
    try:
        stored = objects.get_bytes(root, f"{version}/{MANIFEST}")
    except FileNotFoundError as err:
        raise NoRelease(f"no complete release {version!r} under {root}") from err
    manifest = copy / MANIFEST
    if manifest.exists() and manifest.read_bytes() == stored:
        problems = verify_release(copy) if verify_first else []
    else:
        shutil.rmtree(copy, ignore_errors=True)
        _, problems = pull_to_folder(root, version, folder)
    if problems:
        raise ReleaseMismatch(version, problems)
    return copy
