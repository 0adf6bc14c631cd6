"""`stable_hash` (sources/base.py) in the plan: the compact JSON text it hashes, written by Polars
from the columns and hashed natively, so deterministic ids need no Python per row and stay the
ids `stable_hash` gives.

Each part of an id is one JSON value, as orjson writes it: `json_literal` for a constant,
`json_string` for a String column, `json_number` for an integer or Float64 column, `json_utc_ts`
for a UTC datetime column."""

from __future__ import annotations

from typing import Any

import polars as pl

from pipelines.sources.base import dumps, sha256_hex

# orjson's escapes inside a JSON string: the quote, the backslash and the control characters
# (nothing else: not DEL, not non-ASCII, not U+2028).
_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_JSON_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    **{chr(c): _SHORT_ESCAPES.get(chr(c), f"\\u{c:04x}") for c in range(0x20)},
}
# Polars' text for the floats orjson writes as null.
_NOT_FINITE = ("NaN", "inf", "-inf")


def stable_hash_expr(*parts: pl.Expr, length: int = 20) -> pl.Expr:
    """`stable_hash(*values)` of every row: sha256 hex (first `length` characters) of the JSON
    array of the parts."""
    array = pl.concat_str([pl.lit("["), pl.concat_str(parts, separator=","), pl.lit("]")])
    return sha256_hex(array).str.slice(0, length)


def json_literal(value: Any) -> pl.Expr:
    """A constant part (a kind tag)."""
    return pl.lit(dumps(value))


def json_string(column: str | pl.Expr, null: str | None = "null") -> pl.Expr:
    """A String column as a JSON string with orjson's escapes; a null as `null` (the JSON
    value; `null=None` keeps it null)."""
    escaped = _expr(column).str.replace_many(_JSON_ESCAPES)
    text = pl.concat_str([pl.lit('"'), escaped, pl.lit('"')])
    return text if null is None else text.fill_null(pl.lit(null))


def json_number(column: str | pl.Expr) -> pl.Expr:
    """An integer or Float64 column as a JSON number. Polars writes a finite float's shortest
    round-trip text exactly as orjson does (1e-7, 0.00001, 1e+16, -0.0, 1.0); orjson writes NaN
    and infinities as null."""
    text = _expr(column).cast(pl.String)
    return pl.when(text.is_in(_NOT_FINITE)).then(pl.lit("null")).otherwise(text).fill_null("null")


def json_utc_ts(column: str | pl.Expr) -> pl.Expr:
    """A UTC datetime column as a JSON string of its `isoformat()` (microseconds only when not
    zero)."""
    ts = _expr(column)
    text = (
        pl.when(ts.dt.microsecond() == 0)
        .then(ts.dt.strftime('"%Y-%m-%dT%H:%M:%S+00:00"'))
        .otherwise(ts.dt.strftime('"%Y-%m-%dT%H:%M:%S%.6f+00:00"'))
    )
    return text.fill_null(pl.lit("null"))


def _expr(column: str | pl.Expr) -> pl.Expr:
    return pl.col(column) if isinstance(column, str) else column
