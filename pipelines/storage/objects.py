"""Object storage: one root URI (a local folder or `s3://bucket/prefix`) and what turnlake does
with objects under it, through obstore (Rust's object_store, as Polars and deltalake use).

S3 has no rename, so atomic publication is built from two primitives both stores honour:
`put_if_absent` (a manifest written last marks a complete release) and `compare_and_swap` (a
pointer such as `LATEST` moves only if nobody moved it since it was read). On S3 they are
conditional PUTs (`If-None-Match: *`, `If-Match: <e-tag>`); object_store's local store has no
conditional update, so a local compare-and-swap holds a lock file beside the pointer.

S3 settings come from the standard variables obstore reads: `AWS_ENDPOINT_URL` (any S3-compatible
endpoint; plain `http://` is allowed only when the endpoint says so), `AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` / `AWS_DEFAULT_REGION`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.request import url2pathname

import obstore
from filelock import FileLock
from obstore.exceptions import AlreadyExistsError, BaseError, NotFoundError, PreconditionError
from obstore.store import LocalStore, S3Store

from pipelines.storage.durable import atomic_path

S3_SCHEME = "s3://"
_CHUNK = 8 << 20  # bytes per streamed read
_XML_CODE = re.compile(r"<Code>([^<]+)</Code>")
_XML_MESSAGE = re.compile(r"<Message>([^<]+)</Message>")


class ObjectStoreError(Exception):
    """A root URI that is not one, or a store that refused or could not be reached."""


@dataclass(frozen=True)
class ObjectRoot:
    """Where objects live: an absolute local folder, or `s3://bucket/prefix` (no trailing /)."""

    uri: str

    @classmethod
    def parse(cls, text: str | os.PathLike[str]) -> ObjectRoot:
        """A local path (relative ones are made absolute) or an `s3://bucket[/prefix]` URI;
        `file://` URLs are local paths (percent-decoded). Other schemes raise `ObjectStoreError`."""
        # an S3 UPath (pipelines/storage/uri.py) is no os.PathLike: its str is its URI
        remote = str(text).startswith(S3_SCHEME)
        value = (str(text) if remote else os.fspath(text)).strip()
        if value.startswith(S3_SCHEME):
            bucket, _, prefix = value[len(S3_SCHEME) :].partition("/")
            if not bucket:
                raise ObjectStoreError(f"{value}: an S3 root needs a bucket (s3://bucket/prefix)")
            prefix = prefix.strip("/")
            return cls(f"{S3_SCHEME}{bucket}/{prefix}" if prefix else f"{S3_SCHEME}{bucket}")
        if value.startswith("file://"):  # a URL: its path is percent-encoded (deltalake's are)
            value = url2pathname(value[len("file://") :])
        elif "://" in value:
            raise ObjectStoreError(
                f"{value}: unsupported root; use a local folder or s3://bucket/prefix"
            )
        if not value:
            raise ObjectStoreError("an empty root: use a local folder or s3://bucket/prefix")
        return cls(str(Path(value).absolute()))

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith(S3_SCHEME)

    @property
    def path(self) -> Path:
        """The local folder (an S3 root has none)."""
        if self.is_s3:
            raise ObjectStoreError(f"{self.uri} is not a local folder")
        return Path(self.uri)

    def join(self, *parts: str) -> ObjectRoot:
        """A root below this one."""
        tail = "/".join(part.strip("/") for part in parts if part.strip("/"))
        return ObjectRoot(f"{self.uri.rstrip('/')}/{tail}" if tail else self.uri)

    def __str__(self) -> str:
        return self.uri


def _bucket_store(root: ObjectRoot) -> S3Store:
    # The AWS settings are read from the environment when a store is made, so the environment
    # is part of the key: a changed credential or endpoint makes a new store.
    settings = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    bucket = root.uri[len(S3_SCHEME) :].partition("/")[0]
    return _cached_bucket_store(bucket, settings, os.getpid())


@functools.lru_cache(maxsize=16)
def _cached_bucket_store(bucket: str, aws_settings: tuple, pid: int) -> S3Store:
    """One store per bucket, settings and process, reused by every call under any prefix: a
    store is an HTTP client (its TLS roots loaded, its own connection pool), and one made per
    call cost a connection per request and ~20 ms of CPU per new prefix (a forget on S3 sends
    ~8,000 requests under ~100 prefixes). The process id is in the key because a forked child
    must not share its parent's pooled connections."""
    settings = dict(aws_settings)
    endpoint = settings.get("AWS_ENDPOINT_URL_S3") or settings.get("AWS_ENDPOINT_URL", "")
    return S3Store.from_url(
        f"{S3_SCHEME}{bucket}", client_options={"allow_http": endpoint.startswith("http://")}
    )


def _prefix(root: ObjectRoot) -> str:
    """The key prefix of an S3 root inside its bucket ("" at the bucket's top)."""
    return root.uri[len(S3_SCHEME) :].partition("/")[2]


def _at(root: ObjectRoot, key: str, *, create: bool = False) -> tuple[Any, str]:
    """The store that holds `key` under `root`, and the key as that store names it."""
    if root.is_s3:
        prefix = _prefix(root)
        return _bucket_store(root), f"{prefix}/{key}" if prefix else key
    if create:
        root.path.mkdir(parents=True, exist_ok=True)
    return LocalStore(root.path), key


def _in_words(err: BaseError) -> str:
    """An obstore error in one line: the S3 error code and message when the server sent them."""
    text = str(err)
    code, message = _XML_CODE.search(text), _XML_MESSAGE.search(text)
    if code:
        return f"{code.group(1)}: {message.group(1) if message else ''}".rstrip(": ")
    first = text.splitlines()[0] if text else type(err).__name__
    return first if len(first) <= 300 else first[:300] + "…"


@contextmanager
def _translated(root: ObjectRoot, key: str, *, reading: bool = True) -> Iterator[None]:
    """obstore's errors as the ones callers handle: FileNotFoundError for an object that a read
    did not find, ObjectStoreError (one line, naming the object) for anything else the store
    refused (a missing bucket, credentials, an unreachable endpoint)."""
    try:
        yield
    except (NotFoundError, FileNotFoundError) as err:  # obstore raises either
        if reading and "NoSuchBucket" not in str(err):
            raise FileNotFoundError(f"{root.join(key)}: no such object") from err
        raise ObjectStoreError(f"{root.join(key)}: {_in_words(err)}") from err
    except (AlreadyExistsError, PreconditionError):
        raise
    except BaseError as err:
        raise ObjectStoreError(f"{root.join(key)}: {_in_words(err)}") from err


def list_keys(root: ObjectRoot, prefix: str = "") -> list[str]:
    """Every object key under `root` (recursively, below `prefix`), sorted; none for a missing
    local folder."""
    if not root.is_s3 and not root.path.is_dir():
        return []
    with _translated(root, prefix):
        store, under = _at(root, prefix.strip("/"))
        batches = obstore.list(store, under.strip("/") or None)
        skip = len(_prefix(root)) + 1 if root.is_s3 and _prefix(root) else 0
        return sorted(meta["path"][skip:] for batch in batches for meta in batch)


def exists(root: ObjectRoot, key: str) -> bool:
    try:
        with _translated(root, key):
            obstore.head(*_at(root, key))
    except FileNotFoundError:
        return False
    return True


def e_tag(root: ObjectRoot, key: str) -> str | None:
    """An object's e-tag without its quotes (None when the store gives none, as a local one
    may); FileNotFoundError when it does not exist."""
    with _translated(root, key):
        tag = obstore.head(*_at(root, key)).get("e_tag")
    return tag.strip('"') if tag else None


def get_bytes(root: ObjectRoot, key: str) -> bytes:
    """An object's bytes; FileNotFoundError when it does not exist."""
    with _translated(root, key):
        return bytes(obstore.get(*_at(root, key)).bytes())


def read_file(path: Path) -> bytes:
    """A local file's or an S3 path's bytes (an `as_root` path); FileNotFoundError when it does
    not exist. On S3 one GET: reading through the path's file system sends a HEAD first."""
    text = str(path)
    if not text.startswith(S3_SCHEME):
        return Path(path).read_bytes()
    folder, _, name = text.rpartition("/")
    return get_bytes(ObjectRoot.parse(folder), name)


def _chunks(root: ObjectRoot, key: str) -> Iterator[bytes]:
    with _translated(root, key):
        for chunk in obstore.get(*_at(root, key)).stream(min_chunk_size=_CHUNK):
            yield bytes(chunk)


def sha256_of(root: ObjectRoot, key: str) -> str:
    """sha256 of an object's bytes, streamed (never the whole object in memory)."""
    digest = hashlib.sha256()
    for chunk in _chunks(root, key):
        digest.update(chunk)
    return digest.hexdigest()


def download(root: ObjectRoot, key: str, path: Path) -> None:
    """Stream an object into a local file (its folder created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        for chunk in _chunks(root, key):
            fh.write(chunk)


def put_bytes(root: ObjectRoot, key: str, data: bytes) -> None:
    """Write an object whole (atomic: readers see the old object or the new one)."""
    with _translated(root, key, reading=False):
        obstore.put(*_at(root, key, create=True), data)


def put_file(root: ObjectRoot, key: str, path: Path) -> None:
    """Upload a local file (multipart when large; atomic as `put_bytes`)."""
    with _translated(root, key, reading=False):
        obstore.put(*_at(root, key, create=True), path)


def put_if_absent(root: ObjectRoot, key: str, data: bytes) -> bool:
    """Create an object only if none exists at `key`; False (nothing written) when one does."""
    try:
        with _translated(root, key, reading=False):
            obstore.put(*_at(root, key, create=True), data, mode="create")
    except AlreadyExistsError:
        return False
    return True


def _head_and_bytes(root: ObjectRoot, key: str) -> tuple[dict | None, bytes | None]:
    try:
        with _translated(root, key):
            result = obstore.get(*_at(root, key))
            return dict(result.meta), bytes(result.bytes())
    except FileNotFoundError:
        return None, None


def compare_and_swap(root: ObjectRoot, key: str, expected: bytes | None, new: bytes) -> bool:
    """Replace the object at `key` by `new` only if it still holds `expected` (None: only if no
    object exists); False (nothing written) when another writer changed it first."""
    if expected is None:
        return put_if_absent(root, key, new)
    if not root.is_s3:
        return _local_compare_and_swap(root.path / key, expected, new)
    meta, current = _head_and_bytes(root, key)
    if meta is None or current != expected:
        return False
    try:
        with _translated(root, key, reading=False):
            version = {k: meta[k] for k in ("e_tag", "version") if meta.get(k)}
            obstore.put(*_at(root, key), new, mode=version)
    except PreconditionError:
        return False
    return True


def append_bytes(root: ObjectRoot, key: str, data: bytes) -> None:
    """Append `data` to the object at `key` (created when missing). S3 has no append: the
    object is rewritten whole by compare-and-swap, retried until no other writer came between
    the read and the write, so concurrent appenders each keep their bytes."""
    while True:
        try:
            current: bytes | None = get_bytes(root, key)
        except FileNotFoundError:
            current = None
        if compare_and_swap(root, key, current, (current or b"") + data):
            return


def _local_compare_and_swap(path: Path, expected: bytes, new: bytes) -> bool:
    # object_store's local store has no conditional update: a lock file beside the object
    # serializes the read-compare-write of every turnlake writer.
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_name(f".{path.name}.lock")):
        if not path.exists() or path.read_bytes() != expected:
            return False
        with atomic_path(path) as tmp:
            tmp.write_bytes(new)
    return True


def delete(root: ObjectRoot, key: str) -> None:
    """Remove an object (nothing if it does not exist)."""
    try:
        with _translated(root, key):
            obstore.delete(*_at(root, key))
    except FileNotFoundError:
        pass


def copy(source: ObjectRoot, source_key: str, target: ObjectRoot, target_key: str) -> None:
    """Copy one object, within one store server-side, across stores streamed through here."""
    if source == target:
        with _translated(source, source_key):
            store, from_key = _at(source, source_key)
            obstore.copy(store, from_key, _at(source, target_key)[1])
        return
    if not source.is_s3:
        put_file(target, target_key, source.path / source_key)
        return
    # obstore cannot read one store from inside another's upload: stage through a temp file
    with tempfile.TemporaryDirectory(prefix="turnlake-copy-") as folder:
        staged = Path(folder) / "object"
        download(source, source_key, staged)
        put_file(target, target_key, staged)
