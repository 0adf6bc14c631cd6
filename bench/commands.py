"""The commands bench/run.py measures and the environment each runs in: the project's Python and
`turnlake` entry point, a private Dagster instance per run, a kept bytecode cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent

PY = sys.executable
PYCACHE = Path("/tmp/turnlake-bench/pycache")  # set from --work in main()
IMPORTS = "import dagster, polars, pandera.polars; import pipelines.definitions"
# What a command pays to load the definitions, Pandera only if they import it (issue 15).
DEFINITIONS_ONLY = "import pipelines.definitions"


def workers_options(n: int) -> list[str]:
    return ["--log-level", "DEBUG", "--workers", str(n)]


TURNLAKE = str(Path(PY).parent / "turnlake")
# Reads every raw file once before anything is measured, so the lower bound does not pay for cold
# disk reads that the builds after it would not (its time varied 19–39 s at 1 GB without this).
WARM_PAGE_CACHE = (
    "import os, sys\nfor folder, _, names in os.walk(sys.argv[1]):\n    for name in names:\n"
    "        with open(os.path.join(folder, name), 'rb') as fh:\n            fh.read()"
)


def env_for(home: Path, bytecode_cache: bool = True) -> dict:
    """Environment of a measured command. With `bytecode_cache`, compiled .pyc files are kept under
    <work>/pycache (as any normal install keeps __pycache__); without it every process recompiles
    the source of dagster, polars, pandera, … (PYTHONDONTWRITEBYTECODE=1, as this sandbox sets)."""
    env = dict(os.environ)
    env.update(
        DAGSTER_HOME=str(home), TURNLAKE_CONFIG=str(PROJECT / "turnlake.toml"), PYTHONHASHSEED="0"
    )
    env.pop("TURNLAKE_RAW_ROOT", None)
    env.pop("TURNLAKE_DATA_ROOT", None)
    if bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def dagster_home(path: Path) -> Path:
    """A private Dagster instance (absolute paths: the project's dagster.yaml is cwd-relative)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "dagster.yaml").write_text(
        f"storage:\n  sqlite:\n    base_dir: {path}/storage\n"
        "local_artifact_storage:\n  module: dagster._core.storage.root\n  class: "
        "LocalArtifactStorage\n"
        f"  config:\n    base_dir: {path}\n"
        f"compute_logs:\n  module: dagster._core.storage.local_compute_log_manager\n"
        f"  class: LocalComputeLogManager\n  config:\n    base_dir: {path}/logs\n"
        "telemetry:\n  enabled: false\nnux:\n  enabled: false\n"
    )
    return path


def demo(raw: Path, scale: int, seed: int, work: Path) -> None:
    subprocess.run(
        [TURNLAKE, "demo", "--raw-root", str(raw), "--scale", str(scale), "--seed", str(seed)],
        check=True,
        cwd=work,
        env=env_for(work / "dagster-demo"),
        stdout=subprocess.DEVNULL,
    )
