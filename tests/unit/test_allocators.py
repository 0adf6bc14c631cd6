"""The `turnlake` process starts with the allocator settings of pipelines/runtime/allocators.py
unless the user set them."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from pipelines.runtime.allocators import missing_defaults

ROOT = Path(__file__).resolve().parents[2]
# What a `turnlake` process's pyarrow allocates with, after the entry point ran (`--help`: no
# command, nothing else runs).
POOL_AFTER_ENTRY = (
    "from pipelines.cli.entry import main\n"
    "main(['--help'])\n"
    "import pyarrow\n"
    "print('POOL', pyarrow.default_memory_pool().backend_name)\n"
)


def _pool_of_entry_process(**env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"} | env
    result = subprocess.run(
        [sys.executable, "-c", POOL_AFTER_ENTRY],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1]


def test_the_console_script_starts_at_the_entry_that_applies_the_settings():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["turnlake"] == "pipelines.cli.entry:main"


def test_entry_process_allocates_arrow_memory_from_the_system_pool():
    assert _pool_of_entry_process() == "POOL system"


def test_a_pool_the_user_chose_is_kept():
    assert _pool_of_entry_process(ARROW_DEFAULT_MEMORY_POOL="mimalloc") == "POOL mimalloc"


def test_only_unset_variables_are_defaulted_even_an_empty_one_is_the_users():
    assert missing_defaults({}) == {"ARROW_DEFAULT_MEMORY_POOL": "system"}
    assert missing_defaults({"ARROW_DEFAULT_MEMORY_POOL": ""}) == {}
