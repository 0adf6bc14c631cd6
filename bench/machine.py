"""The machine and library versions a benchmark ran on (recorded in every result file)."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def machine() -> dict:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem = next(
        line.split()[1]
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    versions = {
        pkg: metadata.version(pkg)
        for pkg in ("polars", "dagster", "pandera", "pandas", "orjson", "pyarrow")
    }
    git = subprocess.run(
        ["git", "-C", str(PROJECT), "describe", "--always", "--dirty"],
        check=False,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "git": git,
        "nproc": os.cpu_count(),
        "mem_gb": round(int(mem) / 2**20, 1),
        "cpu": cpu,
        "python": platform.python_version(),
        **versions,
        "kernel": platform.release(),
    }
