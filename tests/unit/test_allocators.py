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
SETTINGS = ("ARROW_DEFAULT_MEMORY_POOL", "_RJEM_MALLOC_CONF")
# What a `turnlake` process's pyarrow allocates with and what Polars hands its jemalloc, after
# the entry point ran (`--help`: no command, nothing else runs).
ALLOCATORS_AFTER_ENTRY = (
    "import os\n"
    "from pipelines.cli.entry import main\n"
    "main(['--help'])\n"
    "import polars, pyarrow\n"
    "print(pyarrow.default_memory_pool().backend_name)\n"
    "print(os.environ['_RJEM_MALLOC_CONF'])\n"
)


def _allocators_of_entry_process(**env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k not in SETTINGS} | env
    result = subprocess.run(
        [sys.executable, "-c", ALLOCATORS_AFTER_ENTRY],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip().splitlines()[-2:]


def test_the_console_script_starts_at_the_entry_that_applies_the_settings():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["turnlake"] == "pipelines.cli.entry:main"


def test_entry_process_uses_the_system_pool_and_jemalloc_frees_muzzy_pages_at_once():
    pool, jemalloc_conf = _allocators_of_entry_process()
    assert pool == "system"
    # jemalloc applies the settings in order: the last muzzy_decay_ms is the one in force
    assert jemalloc_conf.endswith(",muzzy_decay_ms:0")


def test_settings_the_user_chose_are_kept():
    pool, jemalloc_conf = _allocators_of_entry_process(
        ARROW_DEFAULT_MEMORY_POOL="mimalloc", _RJEM_MALLOC_CONF="muzzy_decay_ms:2000"
    )
    assert pool == "mimalloc"
    assert jemalloc_conf.endswith(",muzzy_decay_ms:2000")


def test_only_unset_variables_are_defaulted_even_an_empty_one_is_the_users():
    assert missing_defaults({}) == {
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "_RJEM_MALLOC_CONF": "muzzy_decay_ms:0",
    }
    assert missing_defaults({"ARROW_DEFAULT_MEMORY_POOL": "", "_RJEM_MALLOC_CONF": ""}) == {}
