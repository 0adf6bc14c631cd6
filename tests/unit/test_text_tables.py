"""Tables drawn as text: Markdown (check metadata, the data dictionary) with one row per frame
row, `|` inside a cell escaped, long text cut only when asked; console boxes (the CLI, the SQL
shell) with values as Polars prints them; neither touches the process environment."""

import datetime as dt
import os

import polars as pl

from pipelines.cli.options import print_table
from pipelines.runtime.text_tables import box_table, markdown_table
from pipelines.warehouse.shell import render


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


def test_a_box_table_shows_every_value_as_polars_prints_it():
    frame = pl.DataFrame(
        {
            "name": ["a", None],
            "n": [1, 300],
            "share": [0.1 + 0.2, 1e-9],
            "at": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC), None],
            "ok": [True, None],
            "tags": [["x", "y"], []],
        }
    )
    assert box_table(frame) == (
        "┌──────┬─────┬───────────┬─────────────────────────┬──────┬────────────┐\n"
        "│ name ┆ n   ┆ share     ┆ at                      ┆ ok   ┆ tags       │\n"
        "╞══════╪═════╪═══════════╪═════════════════════════╪══════╪════════════╡\n"
        '│ a    ┆ 1   ┆ 0.3       ┆ 2024-01-01 00:00:00 UTC ┆ true ┆ ["x", "y"] │\n'
        "│ null ┆ 300 ┆ 1.0000e-9 ┆ null                    ┆ null ┆ []         │\n"
        "└──────┴─────┴───────────┴─────────────────────────┴──────┴────────────┘"
    )


def test_a_box_table_cuts_long_text_and_shows_the_ends_of_long_frames():
    frame = pl.DataFrame({f"c{i}": [f"r{r}" for r in range(9)] for i in range(5)}).with_columns(
        c0=pl.lit("z" * 12)
    )
    lines = box_table(frame, max_chars=4, max_rows=4, max_cols=2).splitlines()
    rows = [[c.strip() for c in line.strip("│").split("┆")] for line in lines[1:2] + lines[3:-1]]
    assert rows == [
        ["c0", "…", "c4"],
        ["zzzz…", "…", "r0"],
        ["zzzz…", "…", "r1"],
        ["…", "…", "…"],
        ["zzzz…", "…", "r7"],
        ["zzzz…", "…", "r8"],
    ]


class _WatchedEnvironment(dict):
    """os.environ stand-in that remembers every change: Polars' `pl.Config` sets and unsets
    environment variables, which crashes a process whose native threads read them meanwhile."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.changed: list[str] = []

    def __setitem__(self, key: str, value: str) -> None:
        self.changed.append(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.changed.append(key)
        super().__delitem__(key)

    def pop(self, key: str, *default: object) -> object:
        self.changed.append(key)
        return super().pop(key, *default)


def test_drawing_tables_never_changes_the_process_environment(monkeypatch, capsys):
    environment = _WatchedEnvironment(os.environ)
    monkeypatch.setattr(os, "environ", environment)
    frame = pl.DataFrame({"source": ["study", "dialogue"], "rows": [2, 3]})
    markdown_table(frame, max_chars=80)
    box_table(frame, max_rows=1, max_cols=1)
    render(frame, "table")
    print_table("rows per source", frame)
    assert environment.changed == []
    assert "│ study    ┆ 2    │" in capsys.readouterr().out
