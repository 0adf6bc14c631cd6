"""Imported by the forkserver of the multiprocess executor, last of `executors.PRELOAD_MODULES`,
and by nothing else: importing it computes what every step process would otherwise compute again
for itself, once, in the forkserver. A step process is a fork of it and starts with its caches.

- the engine digest (`storage/engine.py`: every file of the engine read and hashed, the installed
  distributions' metadata parsed), which every step's cache keys and checks hold;
- each source's parser version (the import closure of its parsing code, read with `ast`), which
  the bronze steps hold.

Per step process that was ~0.5 s of CPU (a third of a demo step's, profiled). The code they digest
is the code the forkserver has just imported for the steps, so a step's keys still name the code
it runs.
"""

from __future__ import annotations

from pipelines.config.names import SOURCES
from pipelines.ingest.incremental import parser_version
from pipelines.storage.engine import engine_digest


def warm_up() -> None:
    """Compute the engine digest and every source's parser version in this process."""
    engine_digest()
    for source in SOURCES:
        parser_version(source)


warm_up()
