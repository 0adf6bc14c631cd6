"""The Polars engine a partition's transform runs its plans on (every source's `to_silver`, its
tables' collects and the score screen: `units.transform`).

In-memory: a partition's bronze is small (a group is at most 50 k bronze rows, assemble.py) and
its plans are many; the streaming engine's set-up per query was about half of a partition's
transform (at 1 GB the sources' transforms took 13 s of CPU on it instead of 18 s, the same rows).
Named on each collect, never set for the process: Polars keeps its default engine in an
environment variable, and setting one while a native thread reads the environment can crash."""

from __future__ import annotations

TRANSFORM_ENGINE = "in-memory"
