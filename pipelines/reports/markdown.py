"""Markdown tables from data frames, drawn by Polars' own table formatter."""

from __future__ import annotations

import polars as pl


def markdown_table(frame: pl.DataFrame, max_chars: int | None = None) -> str:
    """`frame` as a GitHub-flavoured markdown table, every row and column shown; text cells are
    cut to `max_chars` (with an ellipsis) when given, and their `|` escaped so cells stay cells."""
    escaped = frame.with_columns(pl.col(pl.String).str.replace_all("|", r"\|", literal=True))
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=-1,
        fmt_str_lengths=max_chars or max(1, _longest_text(escaped)),
    ):
        return str(escaped)


def _longest_text(frame: pl.DataFrame) -> int:
    lengths = frame.select(pl.col(pl.String).str.len_chars().max())
    return max((v or 0 for v in lengths.row(0)), default=0) if lengths.width else 0
