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


def tagged_leaves(frame: pl.DataFrame) -> list[pl.DataFrame]:
    """`frame` (tag columns and `value`) with `value` walked down to its string leaves, however
    nested in lists and structs: one frame per leaf path, each row a leaf with its row's tags."""
    dtype = frame.schema["value"]
    if dtype == pl.String:
        return [frame]
    if isinstance(dtype, pl.List):
        return tagged_leaves(frame.explode("value"))
    if isinstance(dtype, pl.Struct):
        tags = pl.exclude("value")
        return [
            part
            for f in dtype.fields
            for part in tagged_leaves(
                frame.select(tags, value=pl.col("value").struct.field(f.name))
            )
        ]
    return []


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


def put_rows(values: pl.Series, rows: pl.Series, new: pl.Series) -> pl.Series:
    """`values` with `values[rows[i]]` replaced by `new[i]` (`rows` ascending and unique; any
    dtype). Polars scatters strings only; in a nested column the runs kept are sliced, not
    gathered: the column is copied once, as its pieces are put together (a gather of a nested
    column costs several times that)."""
    if values.dtype == pl.String:
        return values.clone().scatter(rows, new)
    at = rows.to_list()
    pieces, kept, first = [], 0, 0
    for i, row in enumerate(at):
        if i + 1 < len(at) and at[i + 1] == row + 1:
            continue  # the run of new rows goes on
        start = at[first]
        pieces += [values.slice(kept, start - kept), new.slice(first, i + 1 - first)]
        kept, first = row + 1, i + 1
    pieces.append(values.slice(kept))
    return pl.concat(pieces, rechunk=True).alias(values.name)


# Column names of the frames `replace_keyed_strings` joins (none of a dataset's own).
_KEY, _VALUE, _CLEANED, _ROW = "_leaf_key", "_leaf_value", "_leaf_cleaned", "_leaf_row"


def replace_keyed_strings(
    frame: pl.DataFrame, columns: list[str], keys: pl.Series, changes: pl.DataFrame
) -> pl.DataFrame:
    """`frame` with every string leaf of `columns` (at any depth) replaced by `cleaned` where
    `changes` (key, value, cleaned; unique by key and value) has its row's key (`keys`: one per
    row) and its value; nulls, other values and the dtypes stay as they are. One join per leaf
    path of a column, whatever the number of keys: lists are exploded and put back together."""
    lookup = changes.select(
        pl.col(changes.columns[0]).alias(_KEY),
        pl.col(changes.columns[1]).alias(_VALUE),
        pl.col(changes.columns[2]).alias(_CLEANED),
    )
    keys = keys.rename(_KEY)
    return frame.with_columns(_keyed(keys, frame.get_column(c), lookup).alias(c) for c in columns)


def _keyed(keys: pl.Series, values: pl.Series, lookup: pl.DataFrame) -> pl.Series:
    dtype = values.dtype
    both = pl.DataFrame([keys, values.rename(_VALUE)])
    if dtype == pl.String:
        joined = both.join(lookup, on=[_KEY, _VALUE], how="left", maintain_order="left")
        return joined.select(pl.coalesce(_CLEANED, _VALUE)).to_series()
    if isinstance(dtype, pl.List):
        # an empty or null list is left as it is; the others exploded, their elements replaced
        # (one row each), and gathered again in their order
        rows = both.with_row_index(_ROW)
        longer = rows.filter(pl.col(_VALUE).list.len() > 0).explode(_VALUE)
        longer = longer.with_columns(_keyed(longer[_KEY], longer[_VALUE], lookup).alias(_VALUE))
        gathered = longer.group_by(_ROW, maintain_order=True).agg(pl.col(_VALUE))
        back = rows.select(_ROW, _VALUE).join(
            gathered.rename({_VALUE: "_new"}), on=_ROW, how="left", maintain_order="left"
        )
        length = pl.col(_VALUE).list.len()
        return back.select(
            pl.when(length > 0).then(pl.col("_new")).otherwise(pl.col(_VALUE))
        ).to_series()
    if isinstance(dtype, pl.Struct):
        fields = {
            f"_field{i}": _keyed(keys, values.struct.field(f.name), lookup)
            for i, f in enumerate(dtype.fields)
            if is_textual(f.dtype)
        }
        named = {f"_field{i}": f.name for i, f in enumerate(dtype.fields)}
        holder = pl.DataFrame([values.rename(_VALUE), *(s.rename(n) for n, s in fields.items())])
        return holder.select(
            pl.col(_VALUE).struct.with_fields(pl.col(n).alias(named[n]) for n in fields)
        ).to_series()
    return values
