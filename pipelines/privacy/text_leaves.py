"""The strings inside a column however nested (lists, structs), gathered and rewritten in Polars."""

from __future__ import annotations

import polars as pl


def is_textual(dtype: pl.DataType) -> bool:
    """A String, or a list / struct with a String somewhere inside."""
    if dtype == pl.String:
        return True
    if isinstance(dtype, pl.List):
        return is_textual(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(is_textual(f.dtype) for f in dtype.fields)
    return False


def _leaf_exprs(expr: pl.Expr, dtype: pl.DataType) -> list[pl.Expr]:
    if dtype == pl.String:
        return [expr]
    if isinstance(dtype, pl.List):
        return _leaf_exprs(expr.list.explode(), dtype.inner)
    if isinstance(dtype, pl.Struct):
        return [
            leaf for f in dtype.fields for leaf in _leaf_exprs(expr.struct.field(f.name), f.dtype)
        ]
    return []


def string_leaves(frame: pl.DataFrame, columns: list[str]) -> pl.Series:
    """Every non-null string in `columns` of `frame`, one per occurrence."""
    leaves = [
        frame.select(leaf.alias("value")).to_series()
        for column in columns
        for leaf in _leaf_exprs(pl.col(column), frame.schema[column])
    ]
    if not leaves:
        return pl.Series("value", [], dtype=pl.String)
    return pl.concat(leaves).drop_nulls()


def replace_strings(expr: pl.Expr, dtype: pl.DataType, old: pl.Series, new: pl.Series) -> pl.Expr:
    """`expr` with every string equal to `old[i]` replaced by `new[i]`, at any depth; nulls, other
    values and the dtype stay as they are."""
    if dtype == pl.String:
        return expr.replace(old, new)
    if isinstance(dtype, pl.List):
        return expr.list.eval(replace_strings(pl.element(), dtype.inner, old, new))
    if isinstance(dtype, pl.Struct):
        fields = [
            replace_strings(pl.field(f.name), f.dtype, old, new).alias(f.name)
            for f in dtype.fields
            if is_textual(f.dtype)
        ]
        return expr.struct.with_fields(fields)
    return expr
