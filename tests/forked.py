"""`turnlake` commands in processes of their own, forked from one that has imported the CLI and
the asset graph already: a test that must SIGKILL a command (a process can only kill itself) pays
a fork, not the seconds of importing Dagster, Polars and the graph again. Dagster's multiprocess
executor starts its step processes the same way (pipelines/orchestration/executors.py)."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

# Reads one JSON request a line; for each, forks a child that takes the request's working folder
# and environment (whole: nothing of the server's own leaks into it), runs `turnlake ARGS` with its
# output in a file, and answers with the child's exit code (-N: killed by signal N).
SERVER = r"""
import importlib, json, os, sys
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
from pipelines.cli.main import main
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(output, 1)
            os.dup2(output, 2)
            code = main(request["args"])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""
MORE_PRELOAD = ["pipelines.api", "pipelines.cli.progress"]


class ForkedTurnlake:
    """Runs `turnlake` commands one at a time, each in a fresh fork of one server process."""

    def __init__(self, folder: Path) -> None:
        from pipelines.orchestration.executors import PRELOAD_MODULES  # imports Dagster

        self._folder = folder
        self._count = 0
        self._server = subprocess.Popen(
            [sys.executable, "-c", SERVER, json.dumps([*PRELOAD_MODULES, *MORE_PRELOAD])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self, args: list[str], env: Mapping[str, str], cwd: Path, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        """`turnlake ARGS` as `subprocess.run(..., capture_output=True)` gives it (its stdout and
        stderr both in `.stderr`)."""
        self._count += 1
        output = self._folder / f"command-{self._count}.log"
        request = {"args": args, "env": dict(env), "cwd": str(cwd), "output": str(output)}
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        ready, _, _ = select.select([self._server.stdout], [], [], timeout)
        assert ready, f"turnlake {' '.join(args)} still running after {timeout} s"
        answer = self._server.stdout.readline()
        assert answer, "the server that forks turnlake commands has died"
        text = output.read_text(errors="replace") if output.exists() else ""
        return subprocess.CompletedProcess(args, int(answer), stdout="", stderr=text)

    def close(self) -> None:
        self._server.kill()  # a child still running (a failed test's) keeps its own process
        self._server.wait(timeout=60)
