"""A contract's data rules on a frame in one Polars query, before asking Pandera for failures.

Pandera's polars backend runs one query per column for nullability and one per check (and reads
each answer back), so a contract of 30 columns costs some 60 queries even on a few rows. When
every row holds, that is all it finds; here the same rules, made by Pandera's own check
functions, are answered in one query, with Pandera judging the schema alone (columns, types,
strictness). Anything that does not hold, or a rule this does not know how to take over, leaves
the frame to Pandera's full validation, so a failure is always reported by Pandera itself.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData
from pandera.backends.polars.checks import PolarsCheckBackend
from pandera.config import ValidationDepth, config_context
from pandera.constants import CHECK_OUTPUT_KEY


def _backend(check: pa.Check, lazy: pl.LazyFrame) -> PolarsCheckBackend:
    """The check's polars backend, as `Check.__call__` makes it: a built-in check's function is
    looked up again first (it is registered per data type once the backend is)."""
    name = getattr(check._check_fn, "__name__", None)
    if name is not None and check.is_builtin_check(name):
        check._check_fn = check.get_builtin_check_fn(name)
    return check.get_backend(lazy)(check)


def _rules(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> list[pl.LazyFrame] | None:
    """One boolean column per rule (a column's nullability, each of its checks) as Pandera
    would evaluate it on `frame`; None when the schema holds a rule it cannot take over."""
    if schema.checks or schema.unique or schema.parsers:
        return None
    lazy = frame.lazy()
    rules: list[pl.LazyFrame] = []
    for name, column in schema.columns.items():
        if column.regex or column.parsers:
            return None
        if name not in frame.columns:  # a required one fails Pandera's schema pass first
            continue
        if not column.nullable:  # null and, in a float column, NaN
            held = pl.col(name).is_not_null()
            if frame.schema[name].is_float():
                held = held & pl.col(name).is_not_nan()
            rules.append(lazy.select(held.alias(str(len(rules)))))
        for check in column.checks:
            if check.groupby is not None:
                return None
            out = _backend(check, lazy).apply(PolarsData(lazy, name))
            if not isinstance(out, pl.LazyFrame):
                return None
            value = pl.col(CHECK_OUTPUT_KEY)
            # as Pandera's check backend: a null outcome passes only when the check ignores NA
            held = value | value.is_null() if check.ignore_na else value.fill_null(False)
            rules.append(out.select(held.alias(str(len(rules)))))
    return rules


def holds_at_once(model: type[pa.DataFrameModel], frame: pl.DataFrame) -> bool:
    """True when `frame` satisfies `model` but for `unique` fields (judged over the whole table
    apart): Pandera's schema pass, then every data rule in one query. False means "not proven
    here", never "fails": the caller asks Pandera."""
    schema = model.to_schema()
    try:  # first: it also registers Pandera's polars checks, which `_rules` calls
        with config_context(validation_depth=ValidationDepth.SCHEMA_ONLY):
            model.validate(frame, lazy=True)
    except pa.errors.SchemaErrors:
        return False
    rules = _rules(schema, frame)
    if rules is None:
        return False
    if not rules:
        return True
    verdicts = pl.concat(rules, how="horizontal").select(pl.all().all()).collect()
    return all(verdicts.row(0))
