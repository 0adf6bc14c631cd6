"""Worker processes for CPU-bound Python (parsing raw files, redacting release texts): Python runs
one core per process, and the benchmark machines have several."""

from __future__ import annotations

import atexit
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from functools import cache


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
    return pool
