"""The worker pool's processes exit once it has been idle for a while (after the last parse of a
build they would otherwise hold their memory until the build ends), and come back when work
comes back."""

from __future__ import annotations

import os
import time

import psutil
import pytest

from pipelines.runtime import workers
from pipelines.runtime.workers import IdleExitingPool

IDLE = 0.3


def _alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if psutil.pid_exists(pid)}


def _worker_pids(pool: IdleExitingPool, tasks: int = 4) -> set[int]:
    return set(pool.map(_pid_after, [0.05] * tasks))


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


@pytest.fixture
def pool():
    pool = IdleExitingPool(2, IDLE)
    yield pool
    pool.shutdown(cancel_futures=True)


def test_the_workers_exit_after_the_pool_has_been_idle(pool):
    pids = _worker_pids(pool)
    assert pids and os.getpid() not in pids
    deadline = time.monotonic() + 30
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pids), "the pool's workers outlived its idle time"
    assert not pool.started


def test_work_after_the_workers_exited_starts_new_ones(pool):
    first = _worker_pids(pool)
    time.sleep(IDLE + 1)
    second = _worker_pids(pool)
    assert second and not second & first
    assert list(pool.map(pow, [2, 3], [3, 2])) == [8, 9]


def test_work_within_the_idle_time_reuses_the_workers():
    pool = IdleExitingPool(1, 30)
    try:
        first = _worker_pids(pool, tasks=1)
        time.sleep(IDLE + 1)  # idle, but for less than its 30 s
        assert _worker_pids(pool, tasks=1) == first
    finally:
        pool.shutdown()


def test_idle_workers_released_go_at_once_not_after_their_idle_time():
    pool = IdleExitingPool(2, 600)
    try:
        pids = _worker_pids(pool)
        pool.release_if_idle()
        assert not pool.started
        assert not _alive(pids), "released workers still run"
        assert list(pool.map(pow, [2], [5])) == [32]  # work afterwards starts new ones
    finally:
        pool.shutdown()


def test_release_idle_workers_reaches_the_pools_worker_pool_made(monkeypatch):
    monkeypatch.setattr(workers, "IDLE_SECONDS", 600)
    workers.worker_pool.cache_clear()  # a pool made with this idle time
    pool = workers.worker_pool(2)
    try:
        pids = _worker_pids(pool)
        workers.release_idle_workers()
        assert not pool.started
        assert not _alive(pids), "the pool's idle workers outlived the release"
    finally:
        pool.shutdown()
        workers.worker_pool.cache_clear()


def test_released_workers_go_at_once_and_the_next_ones_fork_from_the_same_forkserver():
    pool = IdleExitingPool(2, 600)
    try:
        pids = _worker_pids(pool)
        server = workers._forkserver_pid()
        pool.release_workers()
        assert not pool.started
        assert not _alive(pids), "released workers still run"
        assert server is not None and workers._forkserver_pid() == server
        again = _worker_pids(pool)
        assert again and not again & pids
        assert workers._forkserver_pid() == server, "the forkserver was started again"
    finally:
        pool.shutdown()
