"""Which raw files a source reads, and reading them, under a raw root that is a local folder or
`s3://bucket/prefix`: a source's glob patterns matched against the raw tree's listing (raw_state.py:
a local tree walked through the folders' stamps of its listing, kept in the build record; on S3
one listing per literal folder its patterns start with, `outputs/`, `decisions/`, whose entries
carry each object's size and stamp, so planning never asks the store about one object at a time).
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pipelines.sources.raw_state import (
    list_objects,
    object_stamp,
    object_store,
    walk_files,
)
from pipelines.storage.uri import as_root, is_remote

_GLOB_CHARS = re.compile(r"[*?\[]")


def local_matches(raw_root: Path, patterns: Iterable[str]) -> list[str]:
    """Relative paths of regular files under a local `raw_root` matching any glob pattern
    (as `glob.glob(recursive=True, include_hidden=True)`), sorted: the folders the patterns can
    reach are walked once, skipping those unchanged since the last walk (raw_state.py); inside
    `only_among`, the given paths that match, without a walk."""
    patterns = sorted(set(patterns))
    matches = any_pattern(patterns).fullmatch
    if _AMONG.get() is not None:
        return sorted(rel for rel in _among(listing_prefixes(patterns)) if matches(rel))
    deep = any("**" in p for p in patterns)
    files = walk_files(
        os.fspath(raw_root),
        listing_prefixes(patterns),
        max_depth=None if deep else max(p.count("/") for p in patterns),
    )
    return sorted(rel for rel in files if matches(rel))


def all_local_files(raw_root: Path) -> list[str]:
    """Every regular file under a local `raw_root`, sorted, hidden files and folders left out."""
    return sorted(walk_files(os.fspath(raw_root), [""], skip_hidden=True))


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A glob pattern (as `glob.glob(recursive=True, include_hidden=True)` reads it) as a regex
    over relative POSIX keys: `*` and `?` stay inside one folder, a `**` folder is zero or more."""
    out = []
    parts = pattern.split("/")
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        text = "".join(
            "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char) for char in part
        )
        out.append(text if last else text + "/")
    return re.compile("".join(out))


def any_pattern(patterns: Iterable[str]) -> re.Pattern[str]:
    """One regex whose full match is a full match of any of the glob `patterns`: one match per
    path instead of one per pattern (the social_rl adapter has 21)."""
    return re.compile("|".join(f"(?:{pattern_regex(p).pattern})" for p in patterns))


# Inside `only_among`: the relative paths (sorted) a listing is answered from, not the raw root.
_AMONG: ContextVar[list[str] | None] = ContextVar("turnlake_among", default=None)


@contextmanager
def only_among(rel_paths: Iterable[str]) -> Iterator[None]:
    """Inside, a source's listing (`local_matches`, `remote_matches`) holds only paths among
    `rel_paths` (files known to exist, e.g. from `all_raw_files`): which of a few files an adapter
    claims is asked without walking the tree or making a handle for every file it holds."""
    token = _AMONG.set(sorted(set(rel_paths)))
    try:
        yield
    finally:
        _AMONG.reset(token)


def _among(prefixes: list[str]) -> Iterator[str]:
    """The paths of `only_among` under any of `prefixes` (which `listing_prefixes` keeps apart)."""
    among = _AMONG.get() or []
    for prefix in prefixes:
        index = bisect.bisect_left(among, prefix)
        while index < len(among) and among[index].startswith(prefix):
            yield among[index]
            index += 1


def literal_prefix(pattern: str) -> str:
    """The folders a pattern names before its first glob character (`outputs/` for
    `outputs/*/meta.json`); '' when it starts with one."""
    folders = []
    for part in pattern.split("/")[:-1]:
        if _GLOB_CHARS.search(part):
            break
        folders.append(part + "/")
    return "".join(folders)


def listing_prefixes(patterns: Iterable[str]) -> list[str]:
    """The fewest prefixes to list so that every pattern's matches are listed once."""
    prefixes = sorted({literal_prefix(p) for p in patterns})
    kept: list[str] = []
    for prefix in prefixes:
        if not any(prefix.startswith(other) for other in kept):
            kept.append(prefix)
    return kept


# ---------------------------------------------------------------- S3


def remote_matches(root: Any, patterns: list[str]) -> list[tuple[str, int, int]]:
    """`list_objects` of the keys matching any pattern: one listing per `listing_prefixes`
    (inside `only_among`, only the keys among its paths)."""
    matches, among = any_pattern(patterns).fullmatch, _AMONG.get()
    keep = None if among is None else set(among)
    return [
        entry
        for prefix in listing_prefixes(patterns)
        for entry in list_objects(root, prefix)
        if entry[0].startswith(prefix) and matches(entry[0]) and (keep is None or entry[0] in keep)
    ]


def remote_root_of(path: Any, rel_path: str) -> str:
    """The raw root's URI of an object path `root/rel_path`."""
    return str(path)[: -len(rel_path) - 1]


def read_object(path: Any, rel_path: str) -> bytes:
    """The bytes of raw object `root/rel_path`; FileNotFoundError when it is gone."""
    import obstore

    from pipelines.storage.objects import ObjectRoot, _translated

    root = remote_root_of(path, rel_path)
    with _translated(ObjectRoot.parse(root), rel_path):
        return bytes(obstore.get(object_store(root), rel_path).bytes())


def head_object(path: Any, rel_path: str) -> tuple[int, int]:
    """(size, stamp) of raw object `root/rel_path`, asked of the store."""
    import obstore

    from pipelines.storage.objects import ObjectRoot, _translated

    root = remote_root_of(path, rel_path)
    with _translated(ObjectRoot.parse(root), rel_path):
        meta = obstore.head(object_store(root), rel_path)
    return meta["size"], object_stamp(meta)


def all_remote_keys(root: Any) -> list[str]:
    """Every object under `root` as a relative key, without hidden files or folders."""
    return visible(key for key, _, _ in list_objects(root))


def visible(rel_paths: Iterable[str]) -> list[str]:
    """The relative paths with no hidden file or folder in them (not raw data)."""
    return [rel for rel in rel_paths if not rel.startswith(".") and "/." not in rel]


def raw_root_exists(raw_root: Any) -> bool:
    """A local raw root is a folder; an S3 one exists when its bucket does (S3 has no empty
    folders). Raises `ObjectStoreError` when the store cannot be asked (credentials, endpoint)."""
    if not is_remote(raw_root):
        return Path(raw_root).is_dir()
    from pipelines.storage.objects import ObjectStoreError

    try:
        list_objects(raw_root, ".turnlake-probe/")
    except ObjectStoreError as err:
        if "NoSuchBucket" in str(err):
            return False
        raise
    return True


def is_empty(raw_root: Any) -> bool:
    """No file (object) at all under the raw root, hidden ones included."""
    if not is_remote(raw_root):
        return not any(files for _, _, files in os.walk(raw_root))
    return not raw_root_exists(raw_root) or not _holds_any(raw_root)


def _holds_any(root: Any) -> bool:
    """Any object under an S3 `root`: the first page of its listing (not the whole listing)."""
    import obstore

    from pipelines.storage.objects import ObjectRoot, _translated

    with _translated(ObjectRoot.parse(str(root)), ""):
        return any(len(batch) for batch in obstore.list(object_store(root), None, chunk_size=1))


def upload_folder(folder: Path, raw_root: Any) -> int:
    """Upload every file under a local `folder` to the same relative keys under an S3 raw root;
    the number uploaded."""
    from pipelines.storage.objects import ObjectRoot, put_file

    root = ObjectRoot.parse(str(raw_root))
    count = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            path = Path(parent, name)
            put_file(root, path.relative_to(folder).as_posix(), path)
            count += 1
    return count


def root_of(raw_root: Any) -> Path:
    """`raw_root` as a root (`as_root`): a local Path or an S3 UPath, never `Path(upath)`."""
    return as_root(raw_root) if isinstance(raw_root, str) else raw_root
