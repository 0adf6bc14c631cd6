"""Data frames drawn as text tables (console boxes and Markdown), without `pl.Config`.

`pl.Config` passes its options to Polars' formatter through environment variables, set and unset
on every use. Changing the environment while other threads read it (Delta's and object_store's
Rust threads, DuckDB, Polars' own pool) is unsafe in C: an `unsetenv`/`setenv` can free the array a
concurrent `getenv` is walking, and the process crashes. A table printed during a build, or by the
CLI after opening a Delta table, did exactly that now and then. The tables here are small (CLI
output, check metadata, the data dictionary), so cells are formatted in Python.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

import polars as pl

ELLIPSIS = "…"


def box_table(
    frame: pl.DataFrame,
    *,
    max_chars: int | None = 80,
    max_rows: int | None = None,
    max_cols: int | None = None,
) -> str:
    """`frame` in a console box, header above a double rule, every cell left-aligned.

    Text longer than `max_chars` is cut with an ellipsis; beyond `max_rows` rows (or `max_cols`
    columns) the first and last halves are shown around an ellipsis row (column)."""
    header, rows = _cells(frame, max_chars, max_rows, max_cols)
    widths = _widths(header, rows)

    def line(cells: Sequence[str]) -> str:
        return "│ " + " ┆ ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " │"

    def rule(left: str, fill: str, middle: str, right: str) -> str:
        return left + middle.join(fill * (w + 2) for w in widths) + right

    return "\n".join(
        [
            rule("┌", "─", "┬", "┐"),
            line(header),
            rule("╞", "═", "╪", "╡"),
            *(line(row) for row in rows),
            rule("└", "─", "┴", "┘"),
        ]
    )


def markdown_table(frame: pl.DataFrame, max_chars: int | None = None) -> str:
    """`frame` as a GitHub-flavoured Markdown table, every row and column shown; text cells are
    cut to `max_chars` (with an ellipsis) when given, and their `|` escaped so cells stay cells."""
    header, rows = _cells(frame, max_chars, None, None)
    rows = [[cell.replace("|", r"\|") for cell in row] for row in rows]
    widths = _widths(header, rows)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def _cells(
    frame: pl.DataFrame, max_chars: int | None, max_rows: int | None, max_cols: int | None
) -> tuple[list[str], list[list[str]]]:
    names = list(frame.columns)
    columns = list(range(len(names)))
    if max_cols is not None and len(names) > max_cols:
        half = max(1, max_cols // 2)
        columns = [*range(half), -1, *range(len(names) - half, len(names))]
    picked = frame
    gap_at = None
    if max_rows is not None and frame.height > max_rows:
        half = max(1, max_rows // 2)
        picked = pl.concat([frame.head(half), frame.tail(half)])
        gap_at = half
    rows = [[_show(value, max_chars) for value in row] for row in picked.iter_rows()]
    if gap_at is not None:
        rows.insert(gap_at, [ELLIPSIS] * len(names))
    header = [ELLIPSIS if i < 0 else names[i] for i in columns]
    return header, [[ELLIPSIS if i < 0 else row[i] for i in columns] for row in rows]


def _widths(header: list[str], rows: list[list[str]]) -> list[int]:
    return [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]


def _show(value: object, max_chars: int | None) -> str:
    text = _text(value).replace("\r\n", "\\n").replace("\n", "\\n")
    if max_chars is not None and len(text) > max_chars:
        return text[:max_chars] + ELLIPSIS
    return text


def _text(value: object) -> str:
    """One value as Polars displays it: null, true/false, floats without noise, times with their
    zone, lists and structs with their items."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        return f"{text} {value.tzname()}" if value.tzinfo is not None else text
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_item(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(_item(item) for item in value.values()) + "}"
    return str(value)


def _item(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else _text(value)


def _float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if value == 0 or 1e-4 <= abs(value) < 1e15:
        text = f"{value:.10g}"
        return text if any(c in text for c in ".e") else text + ".0"
    return f"{value:.4e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")
