"""One writer per data root: builds take an exclusive lock so writes never interleave.

The lock is `filelock`'s (an OS lock on `<data root>/.turnlake.lock`, so a holder that dies,
even by SIGKILL, releases it). One lock object per path and process, shared by every thread, so it
is re-entrant within a process: the CLI holds it around the Dagster run and the assets of that run
take it again. The holder writes who it is into the lock file, for the message of a waiter that
gives up. On object storage (`s3://` data root) it is a lease object with an expiry instead
(pipelines/storage/lease.py).


A run whose steps run in other processes (the multiprocess executor) holds the lock for the whole
run with a *lease*: `run_lease` takes the lock once and names the run's lease token in
`.turnlake.lease`. A step of that run (its process joined the token with `join_run_lease`) finds
the lock held under its own token and goes on, one writing step at a time (`.turnlake.steps.lock`,
on S3 a second lease object of that name);
anyone else waits, as for any holder. So no other build starts between two steps of the run, and
a lease never outlives its holder: it counts only while the lock is held.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from pipelines.storage import delta_cache
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.layout import Layout

# The Dagster concurrency pool of every step that writes the data root (limit 1 in dagster.yaml).
DATA_ROOT_POOL = "turnlake_data_root"
LEASE_FILE = Layout(Path()).lease_file.name  # the lease token's name, an S3 key too
POLL_SECONDS = 0.2

_joined_lease: str | None = None  # the lease token of the run whose steps this process runs
LEASE_KEY = ".turnlake.lock"  # under an s3:// data root: a lease object
STEPS_LEASE_KEY = ".turnlake.steps.lock"  # … and the one a leased run's steps take in turn


class DataRootBusy(RuntimeError):
    """Another build holds the data root."""


def _record_holder(fd: int) -> None:
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} since {since}\n".encode(), 0)


def lock_holder(layout: Layout) -> str:
    """Who holds (or last held) the data root, as its holder wrote it."""
    if layout.is_remote:
        from pipelines.storage.lease import read_lease
        from pipelines.storage.objects import ObjectRoot

        _, fields = read_lease(ObjectRoot.parse(str(layout.data_root)), LEASE_KEY)
        return fields.get("owner", "unknown")
    try:
        return layout.lock_file.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def join_run_lease(token: str | None) -> None:
    """This process runs steps of the run holding lease `token` (None: of no leased run)."""
    global _joined_lease
    _joined_lease = token


def _lease_token(layout: Layout) -> str | None:
    try:
        return layout.lease_file.read_text().strip() or None
    except OSError:
        return None


def _file_lock(path: os.PathLike) -> FileLock:
    return FileLock(path, thread_local=False, is_singleton=True, on_acquired=_record_holder)


def _busy(layout: Layout) -> DataRootBusy:
    return DataRootBusy(
        f"another turnlake build is writing to {layout.data_root} ({lock_holder(layout)}); "
        "wait for it to finish or pass --wait SECONDS"
    )


def _acquire_or_join(lock: FileLock, layout: Layout, deadline: float) -> bool:
    """Take the lock (True), or find it held under this process's run lease (False); polls
    until `deadline`, then raises DataRootBusy."""
    while True:
        try:
            lock.acquire(timeout=0)
            return True
        except Timeout:
            if _joined_lease is not None and _lease_token(layout) == _joined_lease:
                return False
        if time.monotonic() >= deadline:
            raise _busy(layout)
        time.sleep(POLL_SECONDS)


@contextmanager
def data_root_lock(layout: Layout, wait: float = 0.0) -> Iterator[None]:
    """Hold the data root exclusively; wait up to `wait` seconds, then raise DataRootBusy. A step
    of the run holding the lease goes on under it, one writing step of that run at a time. On
    object storage the lock is a lease object (pipelines/storage/lease.py)."""
    if layout.is_remote:  # obstore is imported only for a remote data root
        from pipelines.storage.lease import lease
        from pipelines.storage.objects import ObjectRoot

        root = ObjectRoot.parse(str(layout.data_root))
        key = LEASE_KEY
        if _joined_lease is not None and _lease_token(layout) == _joined_lease:
            key = STEPS_LEASE_KEY  # the run holds the root: its steps go on one at a time
        with lease(root, key, wait, DataRootBusy, str(layout.data_root)), delta_cache.held():
            yield
        return
    layout.lock_file.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    lock = _file_lock(layout.lock_file)
    if _acquire_or_join(lock, layout, deadline):
        try:
            with delta_cache.held():
                yield
        finally:
            lock.release()
        return
    steps = FileLock(layout.steps_lock_file, thread_local=False, is_singleton=True)
    try:
        steps.acquire(timeout=max(deadline - time.monotonic(), 0), poll_interval=POLL_SECONDS)
    except Timeout:
        raise _busy(layout) from None
    try:
        with delta_cache.held():
            yield
    finally:
        steps.release()


@contextmanager
def run_lease(layout: Layout, token: str, wait: float = 0.0) -> Iterator[None]:
    """Hold the data root for a whole run whose steps join `token` (see the module docstring)."""
    lease = layout.lease_file
    with data_root_lock(layout, wait=wait):
        write_bytes_atomic(lease, f"{token}\n".encode())
        try:
            yield
        finally:
            lease.unlink(missing_ok=True)
