"""Small Polars helpers shared by the reward rules."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

AGGREGATIONS = ("mean", "median", "min", "max", "last")


def json_object(**fields: pl.Expr) -> pl.Expr:
    """A JSON object text built from expressions (the rule's inputs for one row)."""
    return pl.struct(**fields).struct.json_encode()


def may_name_key(key: str, column: str = "attributes") -> pl.Expr:
    """False only where the JSON text `column` cannot hold the key `key` (letters and `_`): it
    neither spells `"key"` nor holds a `\\u` escape, the only way to write such a key otherwise.
    A substring search, to mask the rows a `json_path_match` need not parse."""
    text = pl.col(column)
    return text.str.contains(f'"{key}"', literal=True) | text.str.contains("\\u", literal=True)


def mapped(expr: pl.Expr, mapping: Mapping[str, float]) -> pl.Expr:
    """Text → number through a rewards.toml table; values not in the table give null."""
    return expr.replace_strict(
        list(mapping), [float(v) for v in mapping.values()], default=None, return_dtype=pl.Float64
    )


def to_signed(unit: pl.Expr) -> pl.Expr:
    """[0, 1] → [-1, 1]."""
    return 2.0 * unit - 1.0


def aggregate(value: pl.Expr, method: str, order: pl.Expr | None = None) -> pl.Expr:
    """Combine several signal values of one target (inside a group_by)."""
    if method not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, not {method!r}")
    if method == "last":
        return value.sort_by(order).last() if order is not None else value.last()
    # sorted: a float sum's last bits follow the order of its terms, which a parallel group_by
    # does not keep from run to run
    return getattr(value.sort(), method)()


def sorted_ids(column: str = "feedback_id") -> pl.Expr:
    """Aggregation: the distinct contributing ids, sorted (stable provenance lists)."""
    return pl.col(column).unique().sort()
