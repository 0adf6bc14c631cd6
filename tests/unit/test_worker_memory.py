"""A pool worker gives back what its task freed: the pool outlives every step, and its idle
workers' freed memory would otherwise count in the build's RSS until it ends."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import psutil

from pipelines.runtime.workers import gives_back_freed_memory

_kept: list[bytes] = []


def _fragment_the_heap() -> None:
    """~200 MB of 1 000-byte blocks, one in 64 kept: the rest is free but inside the heap, so
    glibc cannot shrink the heap without `malloc_trim`."""
    blocks = [bytes(1000) for _ in range(200_000)]
    _kept.extend(blocks[::64])


@gives_back_freed_memory
def _fragment_then_trim() -> None:
    _fragment_the_heap()


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _rss_after(task) -> float:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(task).result()
        return pool.submit(_rss_mb).result()


def test_a_pool_worker_gives_back_the_memory_its_task_freed():
    kept_all = _rss_after(_fragment_the_heap)
    given_back = _rss_after(_fragment_then_trim)
    # Without the trim ~200 MB stay resident; the kept blocks (1/64) are ~3 MB.
    assert kept_all - given_back > 100, (kept_all, given_back)


def test_the_task_result_is_returned_and_the_main_process_is_not_trimmed(monkeypatch):
    trims = []
    monkeypatch.setattr("pipelines.runtime.workers.trim_malloc", lambda: trims.append(1))
    assert gives_back_freed_memory(lambda x: x + 1)(1) == 2
    assert trims == []
