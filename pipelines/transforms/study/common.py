"""Expressions shared by the study silver builders."""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from pipelines.sources.base import RecordError, dumps, sha256_hex
from pipelines.sources.values import parse_ts

SOURCE = "study"
OPERATOR_ACTOR = "operator"
ROLE_MAP = {"operator": "assistant", "resident": "user"}


# orjson's escapes inside a JSON string: the quote, the backslash and the control characters.
_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_JSON_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    **{chr(c): _SHORT_ESCAPES.get(chr(c), f"\\u{c:04x}") for c in range(0x20)},
}


def hash_expr(prefix: str, *parts: pl.Expr) -> pl.Expr:
    """`stable_hash(prefix, *values)` per row, in the plan (no Python per row): ids that do not
    change between runs or versions. `parts` are `json_text` / `json_number` / `json_utc_ts` of
    the columns, so the text hashed is the compact JSON `stable_hash` hashes (orjson's)."""
    json = pl.concat_str([pl.lit(dumps(prefix)), *parts], separator=",")
    return sha256_hex(pl.concat_str([pl.lit("["), json, pl.lit("]")])).str.slice(0, 20)


def json_text(name: str) -> pl.Expr:
    """A String column as a JSON value (a string with orjson's escapes, or null)."""
    escaped = pl.col(name).str.replace_many(_JSON_ESCAPES)
    return pl.concat_str([pl.lit('"'), escaped, pl.lit('"')]).fill_null(pl.lit("null"))


def json_number(name: str) -> pl.Expr:
    """An integer or float column as a JSON value (Polars writes a float's shortest round-trip
    text as orjson does)."""
    return pl.col(name).cast(pl.String).fill_null(pl.lit("null"))


def json_utc_ts(name: str) -> pl.Expr:
    """A UTC datetime column as `stable_hash` writes it: its `isoformat()` as a JSON
    string (microseconds only when not zero)."""
    ts = pl.col(name)
    text = (
        pl.when(ts.dt.microsecond() == 0)
        .then(ts.dt.strftime('"%Y-%m-%dT%H:%M:%S+00:00"'))
        .otherwise(ts.dt.strftime('"%Y-%m-%dT%H:%M:%S%.6f+00:00"'))
    )
    return text.fill_null(pl.lit("null"))


def json_expr(**fields: pl.Expr) -> pl.Expr:
    """A JSON object (sorted keys, nulls left out) built from expressions, per row.

    Fields whose name ends in `_json` hold JSON text and are embedded as objects, not strings.
    """
    return pl.struct(**fields).map_elements(_encode_object, return_dtype=pl.String)


def _encode_object(row: dict) -> str | None:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if value is None or value == []:
            continue
        if key.endswith("_json"):
            out[key.removesuffix("_json")] = orjson.loads(value)
        else:
            out[key] = value
    return dumps(out) if out else None


def turn_id_expr(index: pl.Expr) -> pl.Expr:
    return pl.concat_str([pl.col("episode_id"), pl.lit("#"), index.cast(pl.String)])


def ts_from_text(column: str, tz: str) -> pl.Expr:
    """Parse free-form timestamps (naive, `Z`, epoch) the way the adapter does; bad ones → null."""
    return pl.col(column).map_elements(
        lambda v: _safe_ts(v, tz), return_dtype=pl.Datetime("us", "UTC")
    )


def _safe_ts(value: Any, tz: str) -> Any:
    try:
        return parse_ts(value, tz)
    except RecordError:
        return None


def quarantine_frame(
    frame: pl.LazyFrame, error_kind: str, message: pl.Expr, raw: pl.Expr
) -> pl.LazyFrame:
    """Silver-stage quarantine rows; `frame` must have `file` and `locator`."""
    return frame.select(
        source=pl.lit(SOURCE),
        file=pl.col("file"),
        locator=pl.col("locator"),
        error_kind=pl.lit(error_kind),
        message=message,
        raw=raw,
        stage=pl.lit("silver"),
    )
