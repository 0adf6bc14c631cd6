"""`turnlake` commands in processes of their own, forked from one that has imported the CLI and
the asset graph already: a test that must SIGKILL a command (a process can only kill itself) pays
a fork, not the seconds of importing Dagster, Polars and the graph again. Dagster's multiprocess
executor starts its step processes the same way (pipelines/orchestration/executors.py).

`ForkedTurnlake.for_engines()` preloads only the libraries, none of turnlake's code: each request
then names an engine (a copy of `pipelines` and `assets`, changed) whose code the fork imports
(tests/graph/test_code_change_soundness.py)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests import alembic_scripts

# Imports the preloaded modules and reads Dagster's migration scripts once (the second argument,
# if any, names tests/alembic_scripts.py, which imports turnlake's code: not for engines); then
# reads one JSON request a line; for each, forks a child that takes the request's working folder
# and environment (whole: nothing of the server's own leaks into it), imports turnlake's code from
# the request's engine folder (if it names one), runs `turnlake ARGS` for each of its commands in
# turn (up to the first that fails) with their output in a file, and answers with the child's exit
# code (-N: killed by signal N; 3: the engine's code was not the one imported).
SERVER = r"""
import importlib, importlib.util, json, os, sys
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
if len(sys.argv) > 2:
    spec = importlib.util.spec_from_file_location("alembic_scripts", sys.argv[2])
    alembic_scripts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(alembic_scripts)
    alembic_scripts.read_dagster_migration_scripts()
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
            engine = request.get("engine")
            if engine:
                sys.path.insert(0, engine)
            import pipelines
            from pipelines.cli.entry import main  # as the console script: its collector too
            if engine and not pipelines.__file__.startswith(engine):
                print("imported", pipelines.__file__, "not the engine at", engine, flush=True)
                os._exit(3)
            for args in request["commands"]:
                code = main(args)
                if code != 0:
                    break
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""
MORE_PRELOAD = ["pipelines.api", "pipelines.cli.progress", "pipelines.cli.main"]
# What a build imports besides turnlake's own code (the seconds of a process start), for a server
# whose forks import turnlake from a folder of their own. A name missing here is only imported
# again in the fork.
LIBRARIES = [
    "dagster",
    "dagster._core.executor.in_process",
    "dagster._core.execution.api",
    "dagster._core.storage.sqlite_storage",
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "polars",
    "pandas",
    "pandera.polars",
    "pandera.backends.polars.builtin_checks",  # imported by the first check a build runs
    "pandera.backends.polars.container",
    "pyarrow",
    "pyarrow.parquet",
    "deltalake",
    "duckdb",
    "sqlalchemy",
    "alembic",
    "pydantic",
    "phonenumbers",
    "jinja2",
    "rich",
    "click",
    "orjson",
    "numpy",
    "yaml",
    "upath.core",  # imported by Dagster when it opens the instance
]


class ForkedTurnlake:
    """Runs `turnlake` commands one at a time, each in a fresh fork of one server process."""

    def __init__(self, folder: Path, engines: bool = False) -> None:
        preload = LIBRARIES
        if not engines:
            from pipelines.orchestration.executors import PRELOAD_MODULES  # imports Dagster

            preload = [*PRELOAD_MODULES, *MORE_PRELOAD]
        self._folder = folder
        self._count = 0
        self._server = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SERVER,
                json.dumps(preload),
                *([] if engines else [alembic_scripts.__file__]),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    @classmethod
    def for_engines(cls, folder: Path) -> ForkedTurnlake:
        """A server that has imported the libraries a build uses but none of turnlake's code, so
        that each `run(..., engine=...)` imports the engine it names."""
        return cls(folder, engines=True)

    def run(
        self,
        args: list[str],
        env: Mapping[str, str],
        cwd: Path,
        timeout: float = 300,
        then: Sequence[list[str]] = (),
        engine: Path | None = None,
    ) -> subprocess.CompletedProcess:
        """`turnlake ARGS` (then each of `then`, up to the first that fails) as
        `subprocess.run(..., capture_output=True)` gives it (stdout and stderr both in `.stderr`);
        with `engine`, turnlake's code is imported from that folder (the server must not have
        imported it: `for_engines`)."""
        self._count += 1
        output = self._folder / f"command-{self._count}.log"
        env = dict(env)
        if engine:  # for the processes it starts: a forkserver imports from PYTHONPATH only
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(engine), env.get("PYTHONPATH")]))
        request = {
            "commands": [args, *then],
            "env": env,
            "cwd": str(cwd),
            "output": str(output),
            "engine": str(engine) if engine else None,
        }
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
