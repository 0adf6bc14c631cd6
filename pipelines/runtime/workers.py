"""Worker processes for CPU-bound Python (parsing raw files, redacting release texts): Python runs
one core per process, and the benchmark machines have several."""

from __future__ import annotations

import atexit
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from multiprocessing.util import Finalize


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
