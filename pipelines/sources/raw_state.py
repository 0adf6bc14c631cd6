"""The raw tree as a build sees it: every file under the raw root with its size and stamp, and
one digest of that state (has any raw file, or the opt-out registry that lives there too, been
added, changed or removed since a build read it?).

**Listing a local tree, kept with the raw state.** Opening a folder costs ~40 µs on the benchmark
VM (26 k folders at 1 GB). A folder's mtime and ctime change whenever an entry is added, removed or
renamed in it (checked on ext4; ctime also catches a tool that puts the mtime back, as rsync and
tar do), so a folder whose (mtime, ctime) is the one recorded when it was last read still holds the
same names: a walk stats it (~2 µs) and takes its names from the listing. A process keeps one
listing per raw root (every folder with its stamp and every name in it, hidden ones included),
which every walk reads and brings up to date: the raw state's, each source's patterns (a build
judges the files no adapter reads from the raw state's `files`). It is kept between builds in the
no-change short cut's record, beside the raw state it was taken with
(orchestration/build_record.py: `seed_listing` before the raw state is taken, `kept_listing` when
the record is written), so it is pruned with that record: the raw state's walk of every folder
replaces it whole, a build that does not fully succeed leaves none (the next walk reads every
folder), another engine or raw root does not use it. A file rewritten in place does not change its
folder, and is caught by its own size and mtime (here, and when the ingest plans). A folder
modified less than `RACY_NS` before it was read may change again within the same clock tick without
its stamp moving (git's "racy" entries): it is not trusted, and is read next time.

**Listing an S3 root** is one ListObjectsV2 listing per literal folder asked for, whose stamps
carry the e-tag (S3 has no folder stamps to keep a listing by); a caller that discovers every
source does it inside `one_listing`, which serves every listing of the root from one listing of it.

**The state** (`raw_state`) counts every file under the raw root, hidden ones and ones no adapter
reads included: a change that no build would act on only costs a normal run. A file modified less
than `RACY_NS` before the state was taken may be written again within the same clock tick without
its mtime moving: such a state is `racy` and must not be trusted later to mean "nothing changed".
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_module
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pipelines.storage.uri import is_remote

# ---------------------------------------------------------------- a local tree


RACY_NS = 2_000_000_000
Folders = dict[str, list]  # relative folder → [stamp or None, sub-folder names, file names]


# raw root (absolute) → its listing, as this process last walked it
_LISTINGS: dict[str, Folders] = {}


def _root_key(raw_root: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(raw_root))


def seed_listing(raw_root: str | os.PathLike[str], folders: Folders) -> None:
    """Start from `folders` (a listing recorded by an earlier process) unless this process
    holds a listing of the root already (at least as fresh; either is only trusted by stamp)."""
    _LISTINGS.setdefault(_root_key(raw_root), folders)


def kept_listing(raw_root: str | os.PathLike[str]) -> Folders:
    """The listing of `raw_root` as this process last walked it (empty if it did not)."""
    return _LISTINGS.get(_root_key(raw_root), {})


def _read_folder(path: str) -> tuple[list[str], list[str]]:
    dirs, files = [], []
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir():
                dirs.append(entry.name)
            elif entry.is_file():
                files.append(entry.name)
    return dirs, files


def _visible(names: list[str]) -> list[str]:
    return [name for name in names if not name.startswith(".")]


def walk_files(
    raw_root: str,
    prefixes: list[str],
    *,
    max_depth: int | None = None,
    skip_hidden: bool = False,
) -> list[str]:
    """Relative POSIX paths of the regular files in the folders `prefixes` ('' = the root,
    'outputs/' …) and below, down to folders `max_depth` deep (None: all), unsorted. Folders
    unchanged since this process's listing of the root last saw them are not read again; a walk
    of every folder (`prefixes` [''], no depth limit, hidden ones included) replaces the listing
    whole, so a folder gone from the tree leaves it."""
    key = _root_key(raw_root)
    old = _LISTINGS.get(key, {})
    every = prefixes == [""] and max_depth is None and not skip_hidden
    new: Folders = {} if every else dict(old)
    started = time.time_ns()
    found: list[str] = []
    stack = [prefix.rstrip("/") for prefix in prefixes]
    while stack:
        rel = stack.pop()
        full = os.path.join(raw_root, rel) if rel else raw_root
        try:
            info = os.stat(full)
        except OSError:
            continue
        if not stat_module.S_ISDIR(info.st_mode):
            continue
        stamp = f"{info.st_mtime_ns}:{info.st_ctime_ns}"
        cached = old.get(rel)
        if cached and cached[0] == stamp:
            dirs, files = cached[1], cached[2]
        else:
            dirs, files = _read_folder(full)
        racy = max(info.st_mtime_ns, info.st_ctime_ns) > started - RACY_NS
        new[rel] = [None if racy else stamp, dirs, files]
        if skip_hidden:
            dirs, files = _visible(dirs), _visible(files)
        base = f"{rel}/" if rel else ""
        found += [base + name for name in files]
        depth = rel.count("/") + 1 if rel else 0
        if max_depth is None or depth < max_depth:
            stack += [base + name for name in dirs]
    _LISTINGS[key] = new
    return found


# ---------------------------------------------------------------- S3


@cache
def _store(root_uri: str, endpoint: str) -> Any:
    from obstore.store import S3Store

    from pipelines.storage.uri import _allow_http

    return S3Store.from_url(root_uri, client_options={"allow_http": _allow_http()})


def object_store(root: Any) -> Any:
    """The obstore S3 store of a raw root (one per root and endpoint)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
    return _store(str(root).rstrip("/"), endpoint)


def object_stamp(meta: dict) -> int:
    """An object's `mtime_ns` for the ingest log: S3's Last-Modified has whole seconds, so the
    e-tag's CRC fills the nanoseconds; an object rewritten within the same second with the same
    size still gets a new stamp (and is re-read)."""
    seconds = int(meta["last_modified"].timestamp())
    tag = zlib.crc32(str(meta.get("e_tag") or "").encode()) % 1_000_000_000
    return seconds * 1_000_000_000 + tag


Listing = list[tuple[str, int, int]]  # (key relative to the root, size, stamp), sorted
# root URI → its whole listing (None until first needed), inside `one_listing`
_SHARED: ContextVar[dict[str, Listing | None] | None] = ContextVar(
    "turnlake_listings", default=None
)


@contextmanager
def one_listing(raw_root: Any) -> Iterator[None]:
    """Inside, every listing of an S3 `raw_root` is cut from one listing of the whole root,
    taken when first needed: what the block sees is the root as it was then (an object added or
    rewritten later is seen by the next block or run). Nothing changes for a local root."""
    key = str(raw_root).rstrip("/")
    shared = _SHARED.get() or {}
    if not is_remote(raw_root) or key in shared:
        yield
        return
    token = _SHARED.set({**shared, key: None})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _list(root: Any, prefix: str) -> Listing:
    import obstore

    from pipelines.storage.objects import ObjectRoot, _translated

    with _translated(ObjectRoot.parse(str(root)), prefix):
        batches = obstore.list(object_store(root), prefix.rstrip("/") or None)
        found = [(m["path"], m["size"], object_stamp(m)) for batch in batches for m in batch]
    return sorted(found)


def list_objects(root: Any, prefix: str = "") -> Listing:
    """(key relative to `root`, size, stamp) of every object under `root/prefix`, sorted."""
    shared, key = _SHARED.get() or {}, str(root).rstrip("/")
    if key not in shared:
        return _list(root, prefix)
    if shared[key] is None:
        shared[key] = _list(root, "")
    return [entry for entry in shared[key] if entry[0].startswith(prefix)]


# ---------------------------------------------------------------- the state


@dataclass(frozen=True)
class RawState:
    digest: str  # of every file's relative path, size and mtime (or object stamp)
    n_files: int
    racy: bool  # a file changed too recently for its stamp to be trusted later
    # every file's relative path, sorted: the build's one listing of the whole tree
    files: tuple[str, ...] = field(default=(), compare=False, repr=False)


def _local_entries(raw_root: Path) -> list[tuple[str, int, int]]:
    root = os.fspath(raw_root)
    base, stat = root.rstrip("/") + "/", os.stat  # 136 k files at 1 GB: no os.path.join each
    entries = []
    for rel in walk_files(root, [""]):  # every file, hidden ones included
        try:
            info = stat(base + rel)
        except FileNotFoundError:  # removed since the listing: gone, as far as a build sees
            continue
        entries.append((rel, info.st_size, info.st_mtime_ns))
    return entries


def raw_state(raw_root: Path) -> RawState:
    """The state of every file under `raw_root` (a local folder or an S3 prefix) now."""
    taken = time.time_ns()
    entries = sorted(list_objects(raw_root) if is_remote(raw_root) else _local_entries(raw_root))
    digest = hashlib.sha256()
    for rel, size, stamp in entries:
        digest.update(f"{rel}\0{size}\0{stamp}\n".encode())
    newest = max((stamp for _, _, stamp in entries), default=0)
    racy = not is_remote(raw_root) and newest > taken - RACY_NS
    files = tuple(rel for rel, _, _ in entries)
    return RawState(digest.hexdigest()[:32], len(entries), racy, files)
