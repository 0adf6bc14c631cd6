"""Worker processes for CPU-bound Python (parsing raw files, redacting release texts): Python runs
one core per process, and the benchmark machines have several."""

from __future__ import annotations

import atexit
import ctypes
import functools
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from multiprocessing.util import Finalize
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def worker_count(configured: int, n_units: int, min_units: int) -> int:
    """Processes for `n_units` of work: one when there is less than `min_units` (starting a worker
    costs more than it saves), else `configured` (0 = one per CPU core), never more than units."""
    if n_units < min_units:
        return 1
    return max(1, min(configured or os.cpu_count() or 1, n_units))


@cache
def worker_pool(workers: int) -> ProcessPoolExecutor:
    """One pool per process and size, reused by every caller (the workers' imports are paid
    once)."""
    # spawn, not fork: a forked child can deadlock on a lock Polars' thread pool held at fork time.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    atexit.register(pool.shutdown, cancel_futures=True)
    # A process that multiprocessing started (a Dagster multiprocess step) exits without atexit
    # handlers, after joining its non-daemon children: the pool's workers would wait forever. Above
    # priority 10, where the pool's own call queue is closed (its shutdown sentinels would be lost).
    Finalize(None, pool.shutdown, kwargs={"cancel_futures": True}, exitpriority=100)
    return pool


def gives_back_freed_memory(task: Callable[P, R]) -> Callable[P, R]:
    """`task`, after which a pool worker returns the memory it freed to the system.

    The pool lives as long as the build and its workers idle between steps: what a task freed
    stays in glibc's heap, in the worker's RSS, until the worker exits (measured on a 1 GB build:
    each parse worker kept ~400-500 MB RSS from bronze to the end, ~140 MB of it given back by
    `malloc_trim`). Trimming costs a few milliseconds per task; in the main process it is skipped
    (between chunks there memory is reused at once)."""

    @functools.wraps(task)
    def then_trimmed(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return task(*args, **kwargs)
        finally:
            if multiprocessing.parent_process() is not None:
                trim_malloc()

    return then_trimmed


def trim_malloc() -> None:
    """Return glibc's free heap pages to the system (nothing where malloc is not glibc's)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    return getattr(ctypes.CDLL(None), "malloc_trim", None)
