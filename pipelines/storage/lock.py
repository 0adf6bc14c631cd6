"""One writer per data root: builds take an exclusive lock so writes never interleave.

The lock is `filelock`'s (an OS lock on `<data root>/.turnlake.lock`, so a holder that dies,
even by SIGKILL, releases it). One lock object per path and process, shared by every thread, so it
is re-entrant within a process: the CLI holds it around the Dagster run and the assets of that run
take it again. The holder writes who it is into the lock file, for the message of a waiter that
gives up. On object storage (`s3://` data root) it is a lease object with an expiry instead
(pipelines/storage/lease.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from filelock import FileLock, Timeout

from pipelines.storage.layout import Layout

# The Dagster concurrency pool of every step that writes the data root (limit 1 in dagster.yaml).
DATA_ROOT_POOL = "turnlake_data_root"
LEASE_KEY = ".turnlake.lock"  # under an s3:// data root: a lease object


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


@contextmanager
def data_root_lock(layout: Layout, wait: float = 0.0) -> Iterator[None]:
    """Hold the data root exclusively; wait up to `wait` seconds, then raise DataRootBusy.
    On object storage the lock is a lease object (pipelines/storage/lease.py)."""
    if layout.is_remote:  # obstore is imported only for a remote data root
        from pipelines.storage.lease import lease
        from pipelines.storage.objects import ObjectRoot

        root = ObjectRoot.parse(str(layout.data_root))
        with lease(root, LEASE_KEY, wait, DataRootBusy, str(layout.data_root)):
            yield
        return
    layout.lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(
        layout.lock_file, thread_local=False, is_singleton=True, on_acquired=_record_holder
    )
    try:
        lock.acquire(timeout=wait, poll_interval=0.2)
    except Timeout:
        raise DataRootBusy(
            f"another turnlake build is writing to {layout.data_root} ({lock_holder(layout)}); "
            "wait for it to finish or pass --wait SECONDS"
        ) from None
    try:
        yield
    finally:
        lock.release()
