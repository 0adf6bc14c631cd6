"""The multiprocess executor's forkserver imports the engine and then forks every step process
from itself. A module that runs Polars work while being imported starts Polars' thread pool in
the forkserver, and the forked steps' first parallel Polars operation then waits forever on a
pool that did not come with them (a `--workers 2` build hung so)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import os, time
    import pipelines.definitions  # what the forkserver preloads
    pid = os.fork()
    if pid == 0:
        import polars as pl
        frame = pl.DataFrame({"k": [i % 97 for i in range(200_000)], "v": range(200_000)})
        frame.group_by("k").agg(pl.col("v").sum()).sort("k")
        os._exit(0)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            raise SystemExit(os.waitstatus_to_exitcode(status))
        time.sleep(0.05)
    os.kill(pid, 9)
    raise SystemExit("the forked process's Polars work did not finish in 30 s")
    """
)


def test_a_process_forked_after_importing_the_engine_runs_polars_work() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
