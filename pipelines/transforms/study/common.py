"""Expressions shared by the study silver builders."""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from pipelines.sources.base import RecordError, dumps
from pipelines.sources.values import parse_ts

SOURCE = "study"
OPERATOR_ACTOR = "operator"
ROLE_MAP = {"operator": "assistant", "resident": "user"}


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
