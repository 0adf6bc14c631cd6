"""Allocator settings a `turnlake` process starts with (issue 15: peak RSS of a build).

Polars (and deltalake) allocate through their own jemalloc, pyarrow through its memory pool
(mimalloc by default), Python through glibc's malloc. Each keeps memory it has freed for reuse,
and that memory counts in the process's RSS until it is given back. Measured on a 1 GB full build
(±130 MB between runs): 3 080 MB with the libraries' defaults, 2 892 MB with pyarrow's system
pool, 2 763 and 2 892 MB (two runs) with that pool and jemalloc returning purged pages at once
(`muzzy_decay_ms:0`: MADV_DONTNEED instead of MADV_FREE, whose pages stay in RSS until the kernel
needs them), at the same wall time within noise. Purging every freed page at once
(`dirty_decay_ms:0` too) makes the build ~40 % slower, so Polars' dirty decay (500 ms) is kept.

The settings are environment variables read when each library first allocates, so they are set
where the process starts, before Polars or pyarrow are imported (`pipelines/cli/entry.py`), and
only when the user has not set them: a deployment may choose its own. Worker and step processes
inherit them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

DEFAULTS: dict[str, str] = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    # Polars appends this to its own settings, so it wins over their muzzy_decay_ms:1000.
    "_RJEM_MALLOC_CONF": "muzzy_decay_ms:0",
}


def missing_defaults(environ: Mapping[str, str]) -> dict[str, str]:
    """The DEFAULTS `environ` does not set (a variable the user set, even empty, is theirs)."""
    return {name: value for name, value in DEFAULTS.items() if name not in environ}


def apply_defaults(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Set the missing DEFAULTS in `environ`; returns what was set."""
    missing = missing_defaults(environ)
    environ.update(missing)
    return missing
