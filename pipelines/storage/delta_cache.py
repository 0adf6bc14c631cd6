"""Open each Delta table once per writer-lock hold, not once per call.

Opening a Delta table reads its log from the last checkpoint on (on S3: several LIST/GET requests
per open, ~25 ms on moto and more per commit since the checkpoint), and a build reads the same
tables hundreds of times. While this process holds the data root's writer lock
(pipelines/storage/lock.py), tables are kept open here:

- `pinned(uri, version)`: a known version never changes, so it is opened once;
- `latest(uri)`: one table per uri, brought up to date on every call by reading only the log
  entries after the version it holds (`update_incremental`), so commits of other processes (the
  steps of a multiprocess run, concurrent partition writers) are seen as by a fresh open, and a
  writer handed the table commits on the newest version (Delta's conflict check is unchanged).

A table only changes identity (deleted and created again, its versions counting from 0 anew)
under the writer lock, and then by this process, which says so (`forget_under`, `vacuum`). Outside
a lock hold nothing is kept: every call opens the table afresh, as before, so a reader never sees a
table deleted by another process since.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

_guard = threading.Lock()
_holds = 0  # nested writer-lock holds of this process (the lock is re-entrant)
_pinned: dict[tuple[str, int], DeltaTable] = {}
_latest: dict[str, DeltaTable] = {}


def _key(uri: str) -> str:
    """One key per table: a relative local path means the same table whatever the cwd later."""
    return uri.rstrip("/") if "://" in uri else os.path.abspath(uri)


@contextmanager
def held() -> Iterator[None]:
    """Keep tables open while this process holds the writer lock; forget them all after."""
    global _holds
    with _guard:
        _holds += 1
    try:
        yield
    finally:
        with _guard:
            _holds -= 1
            if _holds == 0:
                _pinned.clear()
                _latest.clear()


def pinned(uri: str, version: int, options: dict[str, str] | None) -> DeltaTable:
    """The table at `version` (deltalake's errors when it cannot be opened, never cached)."""
    key = (_key(uri), version)
    with _guard:
        found = _pinned.get(key)
    if found is not None:
        return found
    delta = DeltaTable(uri, version=version, storage_options=options)
    with _guard:
        if _holds:
            _pinned[key] = delta
    return delta


def latest(uri: str, options: dict[str, str] | None) -> DeltaTable | None:
    """The table at its newest version, None when there is no table at `uri`."""
    key = _key(uri)
    with _guard:
        found = _latest.get(key)
    if found is not None:
        found.update_incremental()
        return found
    try:
        delta = DeltaTable(uri, storage_options=options)
    except TableNotFoundError:
        return None
    with _guard:
        if _holds:
            _latest[key] = delta
    return delta


def existing(uri: str, options: dict[str, str] | None) -> DeltaTable:
    """`latest`, for a table that must be there: `TableNotFoundError` when it is not (as
    `DeltaTable(uri)` raises)."""
    delta = latest(uri, options)
    if delta is None:
        raise TableNotFoundError(f"no Delta table at {uri}")
    return delta


def forget_under(prefix: str) -> None:
    """Drop every table at or under `prefix` (deleted, or its old versions' files removed)."""
    root = _key(str(prefix))
    with _guard:
        for key in [k for k in _pinned if _within(k[0], root)]:
            del _pinned[key]
        for uri in [u for u in _latest if _within(u, root)]:
            del _latest[uri]


def _within(uri: str, root: str) -> bool:
    return uri == root or uri.startswith(root + "/")


def vacuum(uri: str, options: dict[str, str] | None, **how) -> list[str]:
    """`DeltaTable.vacuum(**how)` on the newest version; the files removed. Versions of the
    table pinned before are dropped and opened afresh next time (their files may be gone: a read
    of them then fails as it would have without the cache)."""
    delta = existing(uri, options)  # a table named by a snapshot is missing: as DeltaTable(uri)
    try:
        return delta.vacuum(**how)
    finally:
        root = _key(uri)
        with _guard:
            for key in [k for k in _pinned if k[0] == root]:
                del _pinned[key]
