"""The data-root lock on object storage: a lease object instead of an OS lock.

S3 has no locks and a process that dies cannot release anything, so the lock is an object
`<data root>/.turnlake.lock` created with put-if-absent, holding its owner (host, pid, a random
token) and an expiry. The holder renews it (compare-and-swap) every third of its time to live
from a daemon thread, and deletes it when done. A waiter that finds the lease expired (its holder
died, or lost the network for longer than the time to live) takes it over by compare-and-swap,
so two waiters never both win. As the local lock, it is re-entrant within a process (the CLI
holds it around the Dagster run and that run's assets take it again).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import orjson

from pipelines.storage import objects
from pipelines.storage.objects import ObjectRoot

LEASE_SECONDS = float(os.environ.get("TURNLAKE_LEASE_SECONDS", "60"))
_POLL = 0.5


@dataclass
class _Held:
    body: bytes
    depth: int = 1
    stop: threading.Event = field(default_factory=threading.Event)


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def lease_body(owner: str, expires: float) -> bytes:
    return orjson.dumps({"owner": owner, "expires": expires}, option=orjson.OPT_SORT_KEYS)


def read_lease(root: ObjectRoot, key: str) -> tuple[bytes | None, dict]:
    """The lease's bytes and fields (None, {} when nobody holds it)."""
    try:
        body = objects.get_bytes(root, key)
    except FileNotFoundError:
        return None, {}
    return body, orjson.loads(body)


def _owner() -> str:
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"pid {os.getpid()} on {socket.gethostname()} since {since} ({uuid.uuid4().hex[:8]})"


def try_acquire(root: ObjectRoot, key: str) -> bytes | None:
    """Take the lease if it is free or expired; its bytes when taken, else None."""
    body = lease_body(_owner(), time.time() + LEASE_SECONDS)
    if objects.put_if_absent(root, key, body):
        return body
    current, lease = read_lease(root, key)
    if current is None:
        return body if objects.put_if_absent(root, key, body) else None  # released meanwhile
    if lease.get("expires", 0) < time.time() and objects.compare_and_swap(root, key, current, body):
        return body
    return None


def _renew(root: ObjectRoot, key: str, held: _Held, ttl: float) -> None:
    while not held.stop.wait(ttl / 3):
        owner = orjson.loads(held.body)["owner"]
        renewed = lease_body(owner, time.time() + ttl)
        if objects.compare_and_swap(root, key, held.body, renewed):
            held.body = renewed


def release(root: ObjectRoot, key: str, body: bytes) -> None:
    """Delete the lease if it is still ours (a lease taken over after expiry is left alone)."""
    current, _ = read_lease(root, key)
    if current == body:
        objects.delete(root, key)


@contextmanager
def lease(
    root: ObjectRoot, key: str, wait: float, busy: type[Exception], what: str
) -> Iterator[None]:
    """Hold the lease at `key`; wait up to `wait` seconds, then raise `busy` naming `what`."""
    name = str(root.join(key))
    with _guard:
        held = _held.get(name)
        if held is not None:
            held.depth += 1
    if held is None:
        held = _acquire(root, key, wait, busy, what)
    try:
        yield
    finally:
        with _guard:
            held.depth -= 1
            done = held.depth == 0
            if done:
                del _held[name]
        if done:
            held.stop.set()
            release(root, key, held.body)


def _acquire(root: ObjectRoot, key: str, wait: float, busy: type[Exception], what: str) -> _Held:
    deadline = time.monotonic() + wait
    while (body := try_acquire(root, key)) is None:
        if time.monotonic() >= deadline:
            _, lease_fields = read_lease(root, key)
            holder = lease_fields.get("owner", "unknown")
            raise busy(
                f"another turnlake build is writing to {what} ({holder}); "
                "wait for it to finish or pass --wait SECONDS"
            )
        time.sleep(_POLL)
    held = _Held(body)
    with _guard:
        _held[str(root.join(key))] = held
    threading.Thread(
        target=_renew, args=(root, key, held, LEASE_SECONDS), daemon=True, name="turnlake-lease"
    ).start()
    return held
