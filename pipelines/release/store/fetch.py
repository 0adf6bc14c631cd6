"""A stored release brought into a local folder: every object downloaded, the manifest last. A
release under a remote data root is verified, checked and rewritten this way; stores.py pulls and
verifies stored releases with it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.release.store.files import MANIFEST
from pipelines.storage import objects
from pipelines.storage.objects import ObjectRoot


def manifest_key(version: str) -> str:
    return f"{version}/{MANIFEST}"


def fetch_release(root: ObjectRoot, version: str, folder: Path) -> None:
    """Download every object of `version` into `folder` (manifest last)."""
    keys = objects.list_keys(root, version)
    for key in sorted(keys, key=lambda k: k == manifest_key(version)):
        objects.download(root, key, folder / key.removeprefix(f"{version}/"))


@contextmanager
def local_release(release: Path) -> Iterator[Path]:
    """A release folder as a local folder: itself, or for a release under a remote data root a
    temporary download of its objects (for the checks and tools that read files)."""
    if not str(release).startswith(objects.S3_SCHEME):
        yield release
        return
    parent, _, version = str(release).rstrip("/").rpartition("/")
    with tempfile.TemporaryDirectory(prefix="turnlake-release-") as tmp:
        local = Path(tmp) / version
        local.mkdir()
        fetch_release(ObjectRoot.parse(parent), version, local)
        yield local
