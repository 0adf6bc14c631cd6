"""One heading of the build report's page (page.py gathers them, cache.py digests them to know
whether the kept page still shows the same)."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl


@dataclass(frozen=True)
class Section:
    """One heading of the page: an optional plot (inline SVG), tables, and a note."""

    key: str
    title: str
    svg: str | None = None
    tables: list[tuple[str, pl.DataFrame]] = field(default_factory=list)
    note: str | None = None
