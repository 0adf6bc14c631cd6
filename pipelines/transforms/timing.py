"""What each source costs the silver step: the seconds of its transform (its units planned, its
share of the stale partitions transformed) and the silver rows it made.

The silver step logs them in its closing line, so a benchmark can charge a source its own
transform, and the step's remainder (assembly: keys, partitions, sorting, writing) by its rows,
instead of charging it a share of the whole step by raw bytes (bench/figures.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# "by source: dialogue 3.21 s / 120345 rows, study 0.80 s / 60211 rows"
SOURCE_PART = re.compile(r"(\w+) ([0-9.]+) s / (\d+) rows")
BY_SOURCE = "by source: "


@dataclass
class SilverTimes:
    """Filled while the silver step runs: seconds and silver rows per source."""

    seconds: dict[str, float] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    partitions: int = 0  # partitions the step transformed (not those partition runs did)

    def add(self, source: str, seconds: float, rows: int = 0) -> None:
        """Charge `source` with `seconds` of its transform (planning its units included) and the
        silver rows it made."""
        self.seconds[source] = self.seconds.get(source, 0.0) + seconds
        self.rows[source] = self.rows.get(source, 0) + rows

    def summary(self) -> str:
        parts = (f"{s} {self.seconds[s]:.2f} s / {self.rows.get(s, 0)} rows" for s in self.seconds)
        return BY_SOURCE + ", ".join(parts)


def read_summary(text: str) -> dict[str, tuple[float, int]]:
    """source → (seconds, rows) of a `SilverTimes.summary` inside `text`; {} when there is none."""
    _, found, rest = text.partition(BY_SOURCE)
    if not found:
        return {}
    return {m[1]: (float(m[2]), int(m[3])) for m in SOURCE_PART.finditer(rest)}
