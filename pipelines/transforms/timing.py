"""What each source costs the silver step: the seconds of its transform (its cache refreshed:
planned, stale chunks transformed and committed) and the rows it contributes to silver.

The silver step logs them in its closing line, so a benchmark can charge a source its own
transform, and the step's remainder (assembly: keys, partitions, sorting, writing) by its rows,
instead of charging it a share of the whole step by raw bytes (bench/figures.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import polars as pl

# "by source: dialogue 3.21 s / 120345 rows, study 0.80 s / 60211 rows"
SOURCE_PART = re.compile(r"(\w+) ([0-9.]+) s / (\d+) rows")
BY_SOURCE = "by source: "


@dataclass
class SilverTimes:
    """Filled while the silver step runs: seconds and silver rows per source."""

    seconds: dict[str, float] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)

    def run(
        self, sources: list[str], silver: Callable[[str], Mapping[str, pl.LazyFrame]]
    ) -> dict[str, Mapping[str, pl.LazyFrame]]:
        """`silver(source)` of every source, each timed; its rows counted (Parquet footers)
        outside the timing."""
        scans = {}
        for source in sources:
            started = time.perf_counter()
            scans[source] = silver(source)
            self.seconds[source] = time.perf_counter() - started
            self.rows[source] = sum(
                int(frame.select(pl.len()).collect().item()) for frame in scans[source].values()
            )
        return scans

    def summary(self) -> str:
        parts = (f"{s} {self.seconds[s]:.2f} s / {self.rows.get(s, 0)} rows" for s in self.seconds)
        return BY_SOURCE + ", ".join(parts)


def read_summary(text: str) -> dict[str, tuple[float, int]]:
    """source → (seconds, rows) of a `SilverTimes.summary` inside `text`; {} when there is none."""
    _, found, rest = text.partition(BY_SOURCE)
    if not found:
        return {}
    return {m[1]: (float(m[2]), int(m[3])) for m in SOURCE_PART.finditer(rest)}
