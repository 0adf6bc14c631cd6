"""Saved research queries: one `NAME.sql` file each, run with `turnlake sql --saved NAME`.

The leading `--` comment lines of a file are its description (`turnlake sql --list`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

QUERY_DIR = Path(__file__).parent


@dataclass(frozen=True)
class SavedQuery:
    """One saved research query: the file's stem, its leading `--` comment, its SQL."""

    name: str
    description: str
    sql: str


def _description(sql: str) -> str:
    lines = []
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.removeprefix("--").strip())
    return " ".join(lines)


def saved_queries() -> dict[str, SavedQuery]:
    """Every saved query by name (`pipelines/warehouse/queries/NAME.sql`), sorted by name."""
    queries = {}
    for path in sorted(QUERY_DIR.glob("*.sql")):
        sql = path.read_text(encoding="utf-8")
        queries[path.stem] = SavedQuery(path.stem, _description(sql), sql)
    return queries
