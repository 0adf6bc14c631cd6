"""Release stores: the releases under a root URI (the local exports folder or
`s3://bucket/prefix`), listed, verified, fetched and published.

A local store is read exactly as `release/store/files.py` reads the exports folder. On S3 nothing
can be renamed, so a release is published as (1) its data files, card and proofs, each checked
against the manifest's sha256 once stored, (2) its `manifest.json` with put-if-absent: from that
moment it is complete, before it it does not exist for a reader, (3) `LATEST` moved by
compare-and-swap from the value read before step 1, and only forward (to a release created later
than the one it names). A publisher that finds `LATEST` moved by another meanwhile stops with
`PublishConflict`: its release is complete and listed, and publishing it again moves `LATEST` if it
is the newer.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from pipelines.release.store.fetch import fetch_release, manifest_key
from pipelines.release.store.files import (
    LATEST,
    MANIFEST,
    complete_releases,
    is_as_of,
    is_version,
    latest_release,
    newest_current,
    read_manifest,
)
from pipelines.release.store.verify import verify_release
from pipelines.storage import objects
from pipelines.storage.fingerprint import md5_file
from pipelines.storage.objects import ObjectRoot


class PublishConflict(Exception):
    """Another publisher changed the store while this one published (LATEST moved, or the same
    version holds another manifest)."""


@dataclass(frozen=True)
class Published:
    version: str
    location: str  # URI (or folder) of the release in the store
    created: bool  # False: the identical release was already there
    latest: bool  # LATEST names it now


def store_releases(root: ObjectRoot) -> list[str]:
    """Versions with a manifest in the store, oldest first (by manifest `created_at`)."""
    if not root.is_s3:
        return complete_releases(root.path)
    keys = set(objects.list_keys(root))
    versions = [
        name
        for name in {key.split("/", 1)[0] for key in keys}
        if is_version(name) and manifest_key(name) in keys
    ]
    created = {v: store_manifest(root, v)["created_at"] for v in versions}
    return sorted(versions, key=lambda v: (created[v], v))


def store_manifest(root: ObjectRoot, version: str) -> dict:
    """A release's manifest; FileNotFoundError when it has none (an incomplete release)."""
    if not root.is_s3:
        return read_manifest(root.path / version)
    return orjson.loads(objects.get_bytes(root, manifest_key(version)))


def _pointer(root: ObjectRoot) -> bytes | None:
    try:
        return objects.get_bytes(root, LATEST)
    except FileNotFoundError:
        return None


def store_latest(root: ObjectRoot) -> str | None:
    """The release `LATEST` names if it is complete, else the newest complete one."""
    if not root.is_s3:
        return latest_release(root.path)
    versions = store_releases(root)
    named = (_pointer(root) or b"").decode().strip()
    if named in versions:
        return named
    return newest_current(versions, lambda v: store_manifest(root, v))


def has_release_folder(root: ObjectRoot, version: str) -> bool:
    """Any object of `version` exists (complete or not)."""
    if not root.is_s3:
        return (root.path / version).is_dir()
    return bool(objects.list_keys(root, version))


def verify_stored(root: ObjectRoot, version: str) -> list[str]:
    """`verify_release` on a stored release; on S3 on a temporary download of all its objects
    (what it holds beyond the manifest included)."""
    if not root.is_s3:
        return verify_release(root.path / version)
    with tempfile.TemporaryDirectory(prefix="turnlake-verify-") as tmp:
        local = Path(tmp) / version
        local.mkdir()
        fetch_release(root, version, local)
        return verify_release(local)


def pull_to_folder(root: ObjectRoot, version: str, destination: Path) -> tuple[Path, list[str]]:
    """Download a stored release to `destination/<version>` (temporary folder, then rename) and
    verify the copy. FileNotFoundError: no complete release; FileExistsError: the target exists."""
    if version not in store_releases(root):
        raise FileNotFoundError(f"no complete release {version!r} under {root}")
    target = destination / version
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    tmp = destination / f".tmp-pull-{version}-{os.getpid()}"
    tmp.mkdir(parents=True)
    fetch_release(root, version, tmp)
    os.rename(tmp, target)
    return target, verify_release(target)


def _is_newer(manifest: dict, version: str, than: dict, than_version: str) -> bool:
    return (manifest["created_at"], version) > (than["created_at"], than_version)


def _stored_by_digest(target: ObjectRoot, pointer: bytes | None) -> dict[str, str]:
    """sha256 → key of each file of the release `pointer` (LATEST) names in the store: what
    a new release holding the same bytes copies server-side instead of uploading."""
    version = (pointer or b"").decode().strip()
    if not is_version(version):
        return {}
    try:
        manifest = store_manifest(target, version)
    except FileNotFoundError:
        return {}
    return {entry["sha256"]: f"{version}/{entry['path']}" for entry in manifest["files"]}


def _stored_as_sent(target: ObjectRoot, key: str, path: Path) -> bool:
    """The object at `key` holds the bytes of `path` by its e-tag, where the e-tag is the MD5
    of the bytes (a single-part object); False when it cannot tell."""
    tag = objects.e_tag(target, key)
    return bool(tag) and "-" not in tag and tag == md5_file(path)


def _upload(
    source: Path, target: ObjectRoot, version: str, manifest: dict, pointer: bytes | None = None
) -> list[str]:
    """Every file but the manifest, then each stored object checked against the manifest. A
    file whose bytes the LATEST release already holds is copied within the store (no bytes
    sent) and checked by its e-tag; the others are uploaded and re-hashed."""
    stored = _stored_by_digest(target, pointer) if target.is_s3 else {}
    digests = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
    unchecked = []
    for path in sorted(p for p in source.rglob("*") if p.is_file() and p.name != MANIFEST):
        rel = path.relative_to(source).as_posix()
        key, same = f"{version}/{rel}", stored.get(digests.get(rel, ""))
        if same is not None:
            objects.copy(target, same, target, key)
            if _stored_as_sent(target, key, path):
                continue
        else:
            objects.put_file(target, key, path)
        unchecked.append(rel)
    return [
        f"{rel}: sha256 of the stored copy differs from the manifest"
        for rel in unchecked
        if rel in digests and objects.sha256_of(target, f"{version}/{rel}") != digests[rel]
    ]


def _commit_manifest(source: Path, target: ObjectRoot, version: str) -> bool:
    """Put the manifest if absent; False when the identical one was already there."""
    data = (source / MANIFEST).read_bytes()
    if objects.put_if_absent(target, manifest_key(version), data):
        return True
    if objects.get_bytes(target, manifest_key(version)) != data:
        raise PublishConflict(f"{target.join(version)} holds another manifest for {version}")
    return False


def move_latest(target: ObjectRoot, version: str, expected: bytes | None) -> bool:
    """Point LATEST at `version` by compare-and-swap from `expected` (what was read before the
    upload) if `version` is newer than what LATEST names; False when it already names a newer
    (or the same) release, or `version` is an as-of release. `PublishConflict` when another
    publisher moved it meanwhile."""
    current = (expected or b"").decode().strip()
    if current == version:
        return True
    if is_as_of(store_manifest(target, version)):  # a release of past tables
        return False
    if current in store_releases(target):
        current_manifest = store_manifest(target, current)
        if not _is_newer(store_manifest(target, version), version, current_manifest, current):
            return False
    if objects.compare_and_swap(target, LATEST, expected, f"{version}\n".encode()):
        return True
    now = (_pointer(target) or b"").decode().strip()
    raise PublishConflict(
        f"release {version} is complete in {target}, but another publisher moved LATEST to "
        f"{now or '(none)'} meanwhile; LATEST left as it is (publish {version} again to make it "
        "LATEST if it is the newer)"
    )


def repoint_latest(target: ObjectRoot, version: str) -> None:
    """Point LATEST at the complete release `version`, older or not: a build (holding the data
    root's lock) reproduced it from the data and settings in force. `PublishConflict` when
    another writer moved LATEST between the read and the swap."""
    expected = _pointer(target)
    if (expected or b"").decode().strip() == version:
        return
    if not objects.compare_and_swap(target, LATEST, expected, f"{version}\n".encode()):
        raise PublishConflict(f"LATEST of {target} moved while pointing it at {version}")


def publish_release(source: Path, target: ObjectRoot) -> Published:
    """Publish the verified local release folder `source` to the store `target`: data files,
    then the manifest (put-if-absent), then LATEST (compare-and-swap). A crash before the
    manifest leaves nothing a reader sees. Raises ValueError listing the problems when the
    source or the stored copy does not verify (nothing is then made visible)."""
    version = source.name
    problems = verify_release(source)
    if problems:
        raise ValueError(f"{source} does not verify: " + "; ".join(problems[:5]))
    expected = _pointer(target)
    manifest = read_manifest(source)
    if objects.exists(target, manifest_key(version)):
        created = _commit_manifest(source, target, version)  # identical, or PublishConflict
    else:
        problems = _upload(source, target, version, manifest, expected)
        if problems:
            raise ValueError(f"{target.join(version)}: " + "; ".join(problems[:5]))
        created = _commit_manifest(source, target, version)
    latest = move_latest(target, version, expected)
    return Published(version, str(target.join(version)), created, latest)
