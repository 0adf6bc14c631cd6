"""A process started by multiprocessing (as Dagster's multiprocess executor starts each step) that
used the shared worker pool must exit when its work is done, not wait on the pool's workers."""

from __future__ import annotations

import multiprocessing

import psutil


def _use_pool() -> None:
    from pipelines.runtime.workers import worker_pool

    assert worker_pool(2).submit(sum, [1, 2]).result() == 3


def test_a_step_process_that_used_the_worker_pool_exits():
    child = multiprocessing.get_context("spawn").Process(target=_use_pool)
    child.start()
    child.join(timeout=60)
    alive = child.is_alive()
    if alive:  # its pool workers are its children: kill them first, or they outlive the test
        for worker in psutil.Process(child.pid).children(recursive=True):
            worker.kill()
        child.kill()
    assert not alive, "the step process hung at exit, joining the worker pool's processes"
    assert child.exitcode == 0
