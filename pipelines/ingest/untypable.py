"""Rows an adapter built that do not fit their bronze dtypes (a value its checks let through, such
as an integer past Int64): which rows, which column, and the quarantine row each one becomes.

Only the rows that do not fit are quarantined, each with the best raw copy of its record; the
file's other rows go to bronze. The search runs only when typing a whole batch failed, so clean
data pays nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from pipelines.schemas import frame_from_rows
from pipelines.sources.base import dumps_safe, raw_excerpt
from pipelines.sources.jsonio import Span, unit_at

MESSAGE_VALUE_CHARS = 200  # the offending value as shown in the message; the raw copy has it all


@dataclass(frozen=True)
class Misfit:
    """The first column (in contract order) of one row whose value its dtype cannot hold."""

    column: str
    dtype: pl.DataType
    value: Any

    @property
    def error_kind(self) -> str:
        # An integer too large for an integer column is the right type with an impossible value,
        # as the adapters' own 64-bit check (`int64`) calls it; anything else is the wrong type.
        is_int = isinstance(self.value, int) and not isinstance(self.value, bool)
        return "bad_value" if is_int and self.dtype.is_integer() else "bad_type"

    def message(self, table: str) -> str:
        shown = repr(self.value)
        if len(shown) > MESSAGE_VALUE_CHARS:
            shown = shown[:MESSAGE_VALUE_CHARS] + "…"
        return f"{table}.{self.column} = {shown} does not fit its bronze type {self.dtype}"


def _fits(values: list[Any], column: str, dtype: pl.DataType) -> bool:
    try:  # the same construction the batch uses, so "fits" means exactly what it does there
        frame_from_rows([{column: value} for value in values], pl.Schema({column: dtype}))
    except Exception:  # noqa: BLE001 — polars raises several kinds (ComputeError, OverflowError, …)
        return False
    return True


def misfits(rows: list[dict[str, Any]], schema: pl.Schema) -> dict[int, Misfit]:
    """Row index → its first value that does not fit `schema`, for every row that has one.
    A column is tried whole first; only a column that fails is searched value by value."""
    found: dict[int, Misfit] = {}
    for column, dtype in schema.items():
        values = [row.get(column) for row in rows]
        if _fits(values, column, dtype):
            continue
        for index, value in enumerate(values):
            if index not in found and not _fits([value], column, dtype):
                found[index] = Misfit(column, dtype, value)
    return found


def raw_copy(data: bytes | None, row: dict[str, Any], span: Span | None = None) -> bytes | str:
    """The record's own text when the file's bytes are at hand and its locator finds it (a whole
    one-record file, a JSON Lines record; `span`: where in the file `data` lie, when they are
    one part of it), else the row as the adapter built it."""
    locator = row.get("locator")
    if data is not None and locator == "file" and span is None:
        return data
    found = data is not None and isinstance(locator, str)
    unit = unit_at(data, locator, span) if found else None
    if unit is not None:
        return unit
    return dumps_safe({k: v for k, v in row.items() if k not in ("file", "locator")})


def misfit_quarantine_row(
    source: str,
    table: str,
    row: dict[str, Any],
    misfit: Misfit,
    raw: bytes | str,
    excerpt_chars: int,
) -> dict[str, Any]:
    """A parse-quarantine row (without stage / run_id) for one row that does not fit."""
    return {
        "source": source,
        "file": row["file"],
        "locator": row["locator"],
        "error_kind": misfit.error_kind,
        "message": misfit.message(table),
        "raw": raw_excerpt(raw, excerpt_chars),
    }
