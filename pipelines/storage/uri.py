"""A data root or raw root given as a URI: a local folder, or `s3://bucket/prefix`.

A local root stays a plain `pathlib.Path` (nothing changes for it, and it stays fast). An S3 root
is a `universal_pathlib` `UPath` over obstore's fsspec adapter: the path arithmetic and the small
reads and writes (`/`, `exists`, `read_bytes`, `write_bytes`, `rglob`, `open`) look like
pathlib's, and the bytes go through Rust's object_store, as they do in Polars and deltalake. So
`Layout` builds an object's path the same way for both, and only the few places that need a
local file system (atomic renames, fsync, the lock, DuckDB's file) ask `is_remote`.

S3 settings are the standard AWS variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`); plain `http://` endpoints (MinIO,
moto) are allowed when `AWS_ENDPOINT_URL` says `http://` or `AWS_ALLOW_HTTP=true`.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path
from typing import Any

CACHE_ENV = "TURNLAKE_CACHE_DIR"
S3_SCHEME = "s3://"  # as objects.py, which is imported only for a remote root (obstore: ~60 ms)


def is_remote(path: Any) -> bool:
    """True for a path on object storage (an S3 `UPath` or an `s3://` string)."""
    return str(path).startswith(S3_SCHEME)


def _allow_http() -> bool:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
    flag = os.environ.get("AWS_ALLOW_HTTP", "").lower() in ("1", "true", "yes")
    return flag or endpoint.startswith("http://")


@cache
def _register_obstore() -> None:
    from obstore.fsspec import BufferedFile, register

    register("s3")  # fsspec's "s3" protocol served by obstore (no s3fs needed)
    close = BufferedFile.close

    def close_opened(self: BufferedFile) -> None:
        # obstore 0.12: opening a missing object for reading leaves a file without a reader,
        # whose close() in __del__ prints "Exception ignored … no attribute '_reader'"
        if self.mode != "rb" or hasattr(self, "_reader"):
            close(self)

    BufferedFile.close = close_opened  # type: ignore[method-assign]


def as_root(value: str | os.PathLike[str]) -> Path:
    """A root as given by a user: `s3://bucket/prefix` becomes an S3 `UPath` (typed as a Path:
    it answers the same calls); anything else a local `Path`, unchanged (relative stays
    relative). Raises `ObjectStoreError` for an S3 URI without a bucket or another scheme."""
    if isinstance(value, Path) or (not isinstance(value, str) and is_remote(value)):
        return value  # already a root (a Path, or an S3 UPath)
    text = os.fspath(value)
    if "://" not in text:
        return Path(text)
    from pipelines.storage.objects import ObjectRoot

    root = ObjectRoot.parse(text)  # checks the scheme and the bucket
    if not root.is_s3:
        return root.path
    from upath import UPath

    _register_obstore()
    options = {"allow_http": _allow_http()}
    return UPath(root.uri, client_options=options)  # type: ignore[return-value]


def storage_options(path: Any) -> dict[str, str] | None:
    """The `storage_options` Polars and deltalake take for `path` (None for a local one):
    what the AWS variables do not say on their own."""
    if not is_remote(path):
        return None
    return {"aws_allow_http": "true"} if _allow_http() else {}


def local_cache(root: Any) -> Path:
    """A local folder for what must stay a local file when the data root is remote (the DuckDB
    warehouse, the Dagster instance): `$TURNLAKE_CACHE_DIR` (default `~/.cache/turnlake`) /
    a digest of the root's URI, so each remote root has its own."""
    base = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "turnlake")
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return base / digest


def sha256_object(uri: str) -> str:
    """sha256 of the bytes of the object at `s3://bucket/key` (streamed)."""
    from pipelines.storage.objects import ObjectRoot, sha256_of

    folder, _, name = uri.rpartition("/")
    return sha256_of(ObjectRoot.parse(folder), name)
