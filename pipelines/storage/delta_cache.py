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
table deleted by another process since; a read-only command that opens the same tables many
times may ask for the same keeping for its own duration (`reading`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import orjson
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from pipelines.storage import objects

_guard = threading.Lock()
_holds = 0  # nested writer-lock holds of this process (the lock is re-entrant)
_pinned: dict[tuple[str, int], DeltaTable] = {}
_latest: dict[str, DeltaTable] = {}
_read: dict[tuple[str, int], object] = {}  # what `read_once` made of a version, while held

T = TypeVar("T")


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
                _read.clear()


@contextmanager
def reading() -> Iterator[None]:
    """Keep tables open for one read-only command (`status` opens each source's ingest log a
    dozen times; on S3 each fresh open costs a GET of `_last_checkpoint`, a LIST and a GET per
    commit, an `update_incremental` one LIST). Other processes' commits are still seen
    (`latest` catches up on every call); what is not seen is a table a concurrent `forget`
    deletes and creates anew inside the command: a read then fails or mixes the two tables,
    as a read of a data root in the middle of a `forget` already could."""
    with held():
        yield


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


def read_once(uri: str, version: int, read: Callable[[], T]) -> T:
    """`read()`, the contents of version `version` of the table at `uri`, made once while
    tables are kept open (a version never changes; a small table every step and check reads
    whole, an ingest log, is then one GET per version, not one per call); afresh outside."""
    key = (_key(uri), version)
    with _guard:
        if key in _read:
            return _read[key]  # type: ignore[return-value]
    value = read()
    with _guard:
        if _holds:
            _read[key] = value
    return value


def forget_reads() -> None:
    """Drop what `read_once` made (the tables stay open): a step of an in-process build lets go
    of the ingest logs it read, which the lock held for the whole build (~140 MB of frames under
    the release at 1 GB of raw data, issue 36); the next step that needs one reads it again."""
    with _guard:
        _read.clear()


def forget_under(prefix: str) -> None:
    """Drop every table at or under `prefix` (deleted, or its old versions' files removed)."""
    root = _key(str(prefix))
    with _guard:
        for key in [k for k in _read if _within(k[0], root)]:
            del _read[key]
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
        return vacuum_table(delta, **how)
    finally:
        root = _key(uri)
        with _guard:
            for key in [k for k in _pinned if k[0] == root]:
                del _pinned[key]


MAX_CLOCK_LAG_MS = 60_000
_LOG = "_delta_log"


class ClockBehindTable(RuntimeError):
    """The clock is far behind a table's newest commit: a vacuum with no retention would keep
    the files that commit deleted."""


def vacuum_table(delta: DeltaTable, **how) -> list[str]:
    """`delta.vacuum(**how)`; with no retention, first wait until the clock is past the newest
    commit. delta-rs expires a tombstone only when its deletion time is strictly before now minus
    the retention, and stamps it no later than its commit: a vacuum in a delete's millisecond
    would keep the deleted files, and `forget` needs them gone."""
    if how.get("retention_hours") == 0:
        _wait_past_newest_commit(delta)
    return delta.vacuum(**how)


def _wait_past_newest_commit(delta: DeltaTable) -> None:
    stamp = _newest_commit_millis(delta)
    if stamp is None:
        return
    lag = stamp - time.time_ns() // 1_000_000
    if lag > MAX_CLOCK_LAG_MS:
        raise ClockBehindTable(
            f"{delta.table_uri}: newest commit {lag} ms ahead of this clock; not vacuumed"
        )
    while lag >= 0:
        time.sleep((lag + 1) / 1000)
        lag = stamp - time.time_ns() // 1_000_000


def _newest_commit_millis(delta: DeltaTable) -> int | None:
    """The latest time the newest commit stamps (its own, its removes' deletion times), read
    from its log entry: `DeltaTable.history` can hang on S3 endpoints that page listings oddly."""
    log = objects.ObjectRoot.parse(delta.table_uri.rstrip("/")).join(_LOG)
    try:
        entry = objects.get_bytes(log, f"{delta.version():020d}.json")
    except FileNotFoundError:  # the version is known only from a checkpoint: nothing to wait for
        return None
    stamps = [_stamp(orjson.loads(line)) for line in entry.splitlines() if line.strip()]
    return max((s for s in stamps if s is not None), default=None)


def _stamp(action: dict) -> int | None:
    if "commitInfo" in action:
        return action["commitInfo"].get("timestamp")
    if "remove" in action:
        return action["remove"].get("deletionTimestamp")
    return None
