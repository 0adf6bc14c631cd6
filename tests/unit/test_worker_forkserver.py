"""The worker pool's processes are forked from a forkserver that imported the task's module once:
they share that import instead of each paying it, they run Polars work although the process that
started them has run Polars (its thread pool cannot have been forked), the forkserver goes with the
pool's idle exit (also when its workers were let go first), and nothing the pool started
outlives a SIGKILLed parent.

Each case runs in a fresh interpreter: Python keeps one forkserver per process, and a pool another
test left alive in this one would decide which."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

PROJECT = Path(__file__).resolve().parents[2]


def _run(
    tmp_path: Path, source: str, python_path: str | None = None, cwd: Path = PROJECT, **modules: str
) -> subprocess.CompletedProcess:
    """`source` as the main script of a fresh interpreter started in `cwd`, beside `modules`
    (name → source) it may import, with `PYTHONPATH` the script's folder (a forkserver imports
    from there, not from the script's `sys.path`) unless `python_path` is given; killed with what
    it started after 180 s. Its output goes through files, not pipes: a process it left behind
    would keep a pipe open and the read waiting."""
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        env = {**os.environ, "PYTHONPATH": str(tmp_path) if python_path is None else python_path}
        child = psutil.Popen(
            [sys.executable, str(script)], cwd=cwd, stdout=stdout, stderr=stderr, env=env
        )
    try:
        child.wait(timeout=180)
    except psutil.TimeoutExpired:
        for process in child.children(recursive=True):
            process.kill()
        child.kill()
        raise AssertionError(f"still running after 180 s: {err.read_text()[-2000:]}") from None
    return subprocess.CompletedProcess(
        child.args, child.returncode, out.read_text(), err.read_text()
    )


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# A task module that remembers which process imported it: in a worker, the forkserver it was
# forked from if the import was shared, the worker itself if it imported the module anew.
TASK_MODULE = """
    import os, time

    IMPORTED_IN = os.getpid()

    def where_imported(seconds):
        time.sleep(seconds)  # long enough that both workers get a task
        return os.getpid(), IMPORTED_IN
"""
# Prints, for each of four tasks on two workers, its own pid, the worker's and the importer's.
SHARED_IMPORT = """
    import os
    from pipelines.runtime.workers import IdleExitingPool
    from task_module import where_imported

    if __name__ == "__main__":
        pool = IdleExitingPool(2, 30)
        for worker, imported in pool.map(where_imported, [0.5] * 4):
            print(os.getpid(), worker, imported)
        pool.shutdown()
"""


def test_the_workers_share_one_import_of_the_task_module(tmp_path):
    done = _run(tmp_path, SHARED_IMPORT, task_module=TASK_MODULE)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = [tuple(map(int, line.split())) for line in done.stdout.splitlines()]
    parent = seen[0][0]
    workers = {worker for _, worker, _ in seen}
    importers = {imported for _, _, imported in seen}
    assert len(seen) == 4 and len(workers) == 2, seen
    assert len(importers) == 1 and not importers & (workers | {parent}), seen


# Uses a pool whose idle time is short, then prints whether the forkserver it started has
# exited within 30 s (the pool's workers exit after 0.3 s).
FORKSERVER_AFTER_IDLE = """
    import time
    import psutil
    from pipelines.runtime import workers

    if __name__ == "__main__":
        pool = workers.IdleExitingPool(1, 0.3)
        pool.submit(abs, -1).result()
        server = psutil.Process(workers._forkserver_pid())
        deadline = time.monotonic() + 30
        while (pool.started or server.is_running()) and time.monotonic() < deadline:
            time.sleep(0.05)
        print("workers gone" if not pool.started else "workers alive")
        print("forkserver alive" if server.is_running() else "forkserver gone")
"""


def test_the_forkserver_exits_with_the_idle_pool(tmp_path):
    done = _run(tmp_path, FORKSERVER_AFTER_IDLE)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["workers gone", "forkserver gone"], done.stdout


# Uses a pool whose idle time is short, lets its workers go at once (an ingest's parsing done), then
# prints whether the forkserver it kept for the idle time has exited within 30 s, and whether work
# afterwards still runs.
FORKSERVER_AFTER_RELEASED_WORKERS = """
    import time
    import psutil
    from pipelines.runtime import workers

    if __name__ == "__main__":
        pool = workers.IdleExitingPool(2, 0.3)
        list(pool.map(abs, [-1, -2]))
        server = psutil.Process(workers._forkserver_pid())
        pool.release_workers()
        print("workers gone" if not pool.started else "workers alive")
        deadline = time.monotonic() + 30
        while server.is_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        print("forkserver alive" if server.is_running() else "forkserver gone")
        print(pool.submit(pow, 2, 5).result(timeout=60))
        pool.shutdown()
"""


def test_the_forkserver_kept_for_released_workers_goes_after_the_idle_time(tmp_path):
    done = _run(tmp_path, FORKSERVER_AFTER_RELEASED_WORKERS)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:3] == ["workers gone", "forkserver gone", "32"], done.stdout


# Runs Polars work in this process (its thread pool now exists), then a Polars task in a pool
# worker; prints the thread names of the forkserver the worker was forked from.
POLARS_IN_A_WORKER = """
    import glob
    import polars as pl
    from pipelines.runtime import workers

    def group_sum(n):
        frame = pl.DataFrame({"k": [i % 97 for i in range(n)], "v": range(n)})
        return frame.group_by("k").agg(pl.col("v").sum()).height

    if __name__ == "__main__":
        assert group_sum(200_000) == 97
        pool = workers.IdleExitingPool(1, 30)
        assert pool.submit(group_sum, 200_000).result(timeout=60) == 97
        tasks = glob.glob(f"/proc/{workers._forkserver_pid()}/task/*")
        print(",".join(open(f"{task}/comm").read().strip() for task in tasks))
        pool.shutdown()
"""


def test_a_worker_runs_polars_work_after_its_parent_has(tmp_path):
    done = _run(tmp_path, POLARS_IN_A_WORKER)
    assert done.returncode == 0, done.stderr[-2000:]
    threads = done.stdout.strip().split(",")
    assert "python" in threads, threads
    assert not [t for t in threads if t.startswith("polars-")], threads  # no Polars thread pool


# Starts a pool's workers (idle, waiting for work), prints the pids of every process it started,
# then SIGKILLs itself as a killed build is.
KILLED_WITH_IDLE_WORKERS = """
    import os, signal, time
    import psutil
    from pipelines.runtime import workers

    if __name__ == "__main__":
        pool = workers.IdleExitingPool(2, 600)
        list(pool.map(time.sleep, [0.5, 0.5]))
        print(*[p.pid for p in psutil.Process().children(recursive=True)], flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_parent_leaves_no_worker_or_forkserver(tmp_path):
    done = _run(tmp_path, KILLED_WITH_IDLE_WORKERS)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) >= 3, done.stdout  # two workers, the forkserver (and a resource tracker)
    started = []
    for pid in pids:
        try:
            started.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    deadline = time.monotonic() + 30
    while alive := [p for p in started if not _gone(p)]:
        if time.monotonic() > deadline:
            for process in alive:
                process.kill()
            raise AssertionError(f"orphans of a killed parent: {[p.cmdline() for p in alive]}")
        time.sleep(0.1)


# A copy of the engine put first on `sys.path` by the script, then a task from it on a worker: the
# forkserver imports `pipelines` from its own default path (the installed project), not the copy.
ANOTHER_ENGINE = """
    import sys
    sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0] + "/engine")
    from pipelines.runtime import workers

    if __name__ == "__main__":
        pool = workers.IdleExitingPool(1, 0.3)
        try:
            print(pool.submit(workers.worker_count, 3, 5, 1).result(timeout=60))
        except Exception as error:
            print(type(error).__name__)
        pool.shutdown()
"""


def _engine_copy(tmp_path: Path) -> Path:
    engine = tmp_path / "engine"
    shutil.copytree(
        PROJECT / "pipelines", engine / "pipelines", ignore=shutil.ignore_patterns("__pycache__")
    )
    return engine


def test_a_worker_whose_forkserver_imported_another_engine_refuses_to_run(tmp_path):
    _engine_copy(tmp_path)
    done = _run(tmp_path, ANOTHER_ENGINE, python_path="", cwd=tmp_path)
    assert done.stdout.strip() == "BrokenProcessPool", (done.stdout, done.stderr[-2000:])
    assert "PYTHONPATH" in done.stderr and str(tmp_path / "engine") in done.stderr, done.stderr


def test_a_worker_runs_the_engine_its_process_put_on_pythonpath(tmp_path):
    engine = _engine_copy(tmp_path)
    done = _run(tmp_path, ANOTHER_ENGINE, python_path=str(engine), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3", (done.stdout, done.stderr[-2000:])
