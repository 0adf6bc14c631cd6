"""Cross-table rules of the silver contract that one table's schema cannot see."""

from __future__ import annotations

import polars as pl

# (child table, child column, parent table, parent column)
REFERENCES: tuple[tuple[str, str, str, str], ...] = (
    ("turns", "episode_id", "episodes", "episode_id"),
    ("feedback", "episode_id", "episodes", "episode_id"),
    ("feedback", "turn_id", "turns", "turn_id"),
    ("feedback", "decision_id", "decisions", "decision_id"),
    ("replays", "decision_id", "decisions", "decision_id"),
    ("decisions", "episode_id", "episodes", "episode_id"),
    ("decisions", "turn_id", "turns", "turn_id"),
    ("decisions", "context_hash", "contexts", "context_hash"),
    ("agent_rounds", "episode_id", "episodes", "episode_id"),
)


def dangling_references(tables: dict[str, pl.DataFrame]) -> dict[str, int]:
    """`child.column -> parent.column`: count of non-null values with no parent row."""
    problems = {}
    for child, column, parent, key in REFERENCES:
        values = tables[child].select(pl.col(column).drop_nulls().unique())
        missing = values.join(
            tables[parent].select(pl.col(key).alias(column)), on=column, how="anti"
        )
        if missing.height:
            problems[f"{child}.{column} -> {parent}.{key}"] = missing.height
    return problems
