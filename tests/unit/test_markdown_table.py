"""Markdown tables in check metadata and the data dictionary: one row per frame row, `|` inside a
cell escaped, long text cut only when asked."""

import polars as pl

from pipelines.reports.markdown import markdown_table


def cells(table: str) -> list[list[str]]:
    lines = table.splitlines()
    assert set(lines[1]) <= set("|-:")  # the header separator
    rows = [lines[0], *lines[2:]]
    return [[c.strip() for c in row.replace(r"\|", "\0").split("|")[1:-1]] for row in rows]


def test_every_row_and_column_is_shown_and_pipes_stay_inside_their_cell():
    frame = pl.DataFrame({"column": [f"c{i}|x" for i in range(30)], "n": range(30)})
    got = cells(markdown_table(frame))
    assert got[0] == ["column", "n"]
    assert got[1:] == [[f"c{i}\0x", str(i)] for i in range(30)]


def test_text_is_cut_to_max_chars_only_when_asked():
    frame = pl.DataFrame({"example": ["y" * 200]})
    assert cells(markdown_table(frame))[1] == ["y" * 200]
    assert cells(markdown_table(frame, max_chars=80))[1] == ["y" * 80 + "…"]
