"""Worker processes for CPU-bound Python (parsing raw files, redacting release texts): Python runs
one core per process, and the benchmark machines have several.

A pool's workers are forked from a forkserver that has imported the module of the pool's first
task (`pipelines.ingest.tasks`: Polars, pyarrow, deltalake; neither Pandera nor pandas, see
tests/unit/test_worker_imports.py) once, instead of each spawned worker importing it again. The
forkserver is a fresh interpreter that only imports: no Polars thread pool exists in it to be lost
by a fork (forking the build's own process, which has run Polars, can hang the child:
tests/unit/test_fork_after_import.py). It lives as long as the pool's workers, so its memory is
gone with theirs while silver and the release run."""

from __future__ import annotations

import atexit
import ctypes
import functools
import importlib.abc
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from functools import cache
from multiprocessing.util import Finalize
from pathlib import Path
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def worker_count(configured: int, n_units: int, min_units: int) -> int:
    """Processes for `n_units` of work: one when there is less than `min_units` (starting a worker
    costs more than it saves), else `configured` (0 = one per CPU core), never more than units."""
    if n_units < min_units:
        return 1
    return max(1, min(configured or os.cpu_count() or 1, n_units))


# How long an idle pool keeps its workers. Long enough to bridge the steps between two sources that
# parse in workers, so their imports (~1 s) are paid once (a 1 GB build kept one pool through all
# of bronze); short enough that the workers (~300-370 MB each after a 1 GB parse) are gone while
# the release runs (issue 15: they were the largest share of the build's floor). Silver lets them
# go as it starts (`release_idle_workers`): its plan peaks within those seconds (issue 36).
IDLE_SECONDS = 5.0


@cache
def worker_pool(workers: int) -> IdleExitingPool:
    """One pool per process and size, reused by every caller while its workers are alive."""
    pool = IdleExitingPool(workers, IDLE_SECONDS)
    _POOLS.append(pool)
    atexit.register(pool.shutdown, cancel_futures=True)
    # A process that multiprocessing started (a Dagster multiprocess step) exits without atexit
    # handlers, after joining its non-daemon children: the pool's workers would wait forever. Above
    # priority 10, where the pool's own call queue is closed (its shutdown sentinels would be lost).
    Finalize(None, pool.shutdown, kwargs={"cancel_futures": True}, exitpriority=100)
    return pool


_POOLS: list[IdleExitingPool] = []  # every pool `worker_pool` made in this process


def release_idle_workers() -> None:
    """Let the idle workers of every pool go now rather than after their idle time: for a step
    that uses none, whose own memory would otherwise add to theirs in its first seconds."""
    for pool in _POOLS:
        pool.release_if_idle()


class IdleExitingPool(Executor):
    """A process pool whose workers exit once it has had no task for `idle_seconds`; the next task
    starts new ones."""

    def __init__(self, workers: int, idle_seconds: float) -> None:
        self.workers = workers
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._running = 0
        self._idle_timer: threading.Timer | None = None
        self._holds_forkserver = False  # counted in _FORKSERVER's users (workers or not)

    @property
    def started(self) -> bool:
        """Whether worker processes are alive (or starting)."""
        return self._pool is not None

    def submit(self, fn: Callable[..., R], /, *args: object, **kwargs: object) -> Future[R]:
        with self._lock:
            self._cancel_idle_timer()
            if self._pool is None:
                if not self._holds_forkserver:
                    module = getattr(fn, "__module__", None)
                    _FORKSERVER.use([module] if module else [])
                    self._holds_forkserver = True
                self._pool = _process_pool(self.workers)
            future = self._pool.submit(fn, *args, **kwargs)
            self._running += 1
        future.add_done_callback(self._task_done)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._cancel_idle_timer()
            pool, self._pool = self._pool, None
            held, self._holds_forkserver = self._holds_forkserver, False
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)
        if held:
            _FORKSERVER.release()

    def _task_done(self, _: Future) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._pool is not None:
                # Shut down from a timer thread: this callback may run in the pool's own
                # management thread, which shutdown joins.
                self._idle_timer = threading.Timer(self.idle_seconds, self._exit_if_idle)
                self._idle_timer.daemon = True
                self._idle_timer.start()

    def release_if_idle(self) -> None:
        """Stop the workers now unless a task runs; the next task starts new ones."""
        with self._lock:
            if self._running:
                return
            self._cancel_idle_timer()
            pool, self._pool = self._pool, None
            held, self._holds_forkserver = self._holds_forkserver, False
        self._stop(pool, held)

    def release_workers(self) -> None:
        """Stop the workers now unless a task runs, but keep the forkserver for the idle time:
        for a caller whose work for now is done (an ingest's parsing; its step's own work comes
        next, which the idle workers' memory would add to). A task within the idle time forks
        new workers from it without importing again."""
        with self._lock:
            if self._running:
                return
            pool, self._pool = self._pool, None
        self._stop(pool, False)

    def _exit_if_idle(self) -> None:
        with self._lock:
            if self._running or self._idle_timer is not threading.current_thread():
                return
            self._idle_timer = None
            pool, self._pool = self._pool, None
            held, self._holds_forkserver = self._holds_forkserver, False
        self._stop(pool, held)

    @staticmethod
    def _stop(pool: ProcessPoolExecutor | None, release_forkserver: bool) -> None:
        if pool is not None:
            pool.shutdown(wait=True)
        if release_forkserver:
            _FORKSERVER.release()

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None


def _process_pool(workers: int) -> ProcessPoolExecutor:
    """Workers forked from this process's forkserver (`_FORKSERVER.use` started it)."""
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=_start_worker,
        initargs=(ENGINE_FOLDER,),
    )


class _ForkserverUse:
    """Counts the pools using this process's forkserver (Python keeps one per process), so that
    the last one to exit stops it, if a pool started it: a forkserver someone else started
    (Dagster's multiprocess executor, in the process that runs it) is theirs to stop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools = 0
        self._started_pid: int | None = None

    def use(self, preload: list[str]) -> None:
        with self._lock:
            self._pools += 1
            if _forkserver_pid() is None:
                multiprocessing.forkserver.set_forkserver_preload(preload)
                multiprocessing.forkserver.ensure_running()
                self._started_pid = _forkserver_pid()

    def release(self) -> None:
        """One pool fewer; the last stops the forkserver a pool started: its memory (~150-200
        MB of imports) would otherwise stay until the build ends."""
        with self._lock:
            self._pools -= 1
            if self._pools == 0 and self._started_pid is not None:
                if _forkserver_pid() == self._started_pid:
                    # The standard library's own way to stop it (its tests use it): closes this
                    # process's end of the server's "alive" pipe and waits for the server to exit.
                    multiprocessing.forkserver._forkserver._stop()
                self._started_pid = None


def _forkserver_pid() -> int | None:
    return multiprocessing.forkserver._forkserver._forkserver_pid


_FORKSERVER = _ForkserverUse()


# The `pipelines` package this process runs.
ENGINE_FOLDER = str(Path(__file__).resolve().parents[1])


def _start_worker(engine_folder: str) -> None:
    exit_with_parent()
    refuse_another_engine(engine_folder)
    pyarrow_without_pandas_sniffing()


def refuse_another_engine(engine_folder: str) -> None:
    """Stop a worker whose forkserver imported `pipelines` from elsewhere than the pool's process.

    Python 3.11's forkserver imports its preload modules from its own default path: it is handed
    the parent's `sys.path` but never applies it, and the environment cannot be changed to pass it
    (setting a variable while Rust threads read the environment can crash the process). So a
    process that put a copy of the engine first on `sys.path` must also put it on `PYTHONPATH`,
    or its workers would run other code than the build."""
    if ENGINE_FOLDER != engine_folder:
        raise RuntimeError(
            f"this worker imported pipelines from {ENGINE_FOLDER}, the process that started it "
            f"from {engine_folder}: start it with {Path(engine_folder).parent} on PYTHONPATH, "
            "from a working directory that holds no other pipelines package"
        )


def pyarrow_without_pandas_sniffing() -> None:
    """Keep pyarrow from importing pandas in this process only to learn that a list is no pandas
    object.

    pyarrow imports pandas (~40 MB, ~0.3 s of CPU) the first time it converts a Python list
    (`Table.from_pylist`: how a parse worker types rows), to ask whether the list is a pandas
    Series; a worker never hands it one. Asked once while pandas cannot be imported, pyarrow keeps
    the answer (no pandas objects) and no longer asks; what explicitly needs pandas (`to_pandas`)
    still imports it. Only where pyarrow is imported already and pandas is not."""
    if "pyarrow" not in sys.modules or "pandas" in sys.modules:
        return
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        sys.modules["pyarrow"].array([0])
    finally:
        sys.meta_path.remove(blocker)


class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is not imported here", name=name)


def exit_with_parent() -> None:
    """Make this worker exit as soon as the process that started it is gone.

    An idle pool worker waits on its task queue, whose writing end it holds itself, so it would
    never see the end of a SIGKILLed build and live on as an orphan (and with it the forkserver,
    which exits once every process it forked has). The parent's end of the pipe the worker was
    started through closes when the parent dies: `parent_process().sentinel` is then ready."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    watcher = threading.Thread(
        target=_exit_when_ready, args=(parent.sentinel,), name="exit-with-parent", daemon=True
    )
    watcher.start()


def _exit_when_ready(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def gives_back_freed_memory(task: Callable[P, R]) -> Callable[P, R]:
    """`task`, after which a pool worker returns the memory it freed to the system.

    A pool's workers idle between tasks and for `IDLE_SECONDS` after the last one: what a task
    freed stays in glibc's heap, in the worker's RSS, until the worker exits (measured on a 1 GB
    build while the pool lived as long as the build: each parse worker kept ~400-500 MB RSS from
    bronze to the end, ~140 MB of it given back by
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
