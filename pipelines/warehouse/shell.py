"""An interactive SQL shell over the warehouse's views, on the Python duckdb module (no DuckDB
CLI from the package registries opens a file of the pinned DuckDB 2.0).

Statements end with `;` and may span lines; dot commands (`.tables`, `.schema T`, `.saved`,
`.run NAME`, `.mode table|csv`, `.help`, `.quit`) take one line. The connection is read-only,
and an error is printed without leaving the shell. With `interactive=False` (stdin not a terminal)
there is no prompt or banner: SQL in, results out, and a statement left without `;` at the end of
the input still runs.
"""

from __future__ import annotations

import cmd
import shlex
from pathlib import Path
from typing import TextIO

import duckdb
import polars as pl

from pipelines.runtime.text_tables import box_table
from pipelines.warehouse.queries import saved_queries

PROMPT, CONTINUATION = "turnlake> ", "     ...> "
HELP = """\
SQL statements end with ';' and may span several lines. Dot commands:
  .tables            the views (silver and gold tables, bronze.<table>, release.<dataset>)
  .schema TABLE      the columns and types of a view
  .saved             the saved research queries;  .run NAME  runs one
  .mode table|csv    how results are printed (default table)
  .help              this text;  .quit (or Ctrl-D) leaves
The connection is read-only: nothing you type can change the warehouse."""


def render(frame: pl.DataFrame, mode: str) -> str:
    """A result as text: polars' table (every row and column) or CSV with a header."""
    if mode == "csv":
        return frame.write_csv()
    return f"{box_table(frame)}\n({frame.height} rows)\n"


class WarehouseShell(cmd.Cmd):
    """The read loop: `cmd.Cmd` gives readline editing and history on a terminal."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        *,
        stdin: TextIO,
        stdout: TextIO,
        stderr: TextIO,
        interactive: bool,
        mode: str = "table",
    ) -> None:
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = interactive  # input() uses readline; a pipe is read line by line
        self.con, self.stderr, self.interactive, self.mode = con, stderr, interactive, mode
        self.buffer: list[str] = []
        self.failures = 0
        self.prompt = PROMPT if interactive else ""

    # ------------------------------------------------------------ the loop

    def onecmd(self, line: str) -> bool:
        if line == "EOF":
            if self.buffer and not self.interactive:
                self._run_sql("\n".join(self.buffer))
            self.buffer = []
            return True
        if not self.buffer and line.strip().startswith("."):
            return self._dot(line.strip())
        if self.buffer or line.strip():
            self.buffer.append(line)
        statement = "\n".join(self.buffer).strip()
        if statement.endswith(";"):
            self.buffer = []
            self._run_sql(statement)
        self._set_prompt()
        return False

    def emptyline(self) -> bool:  # cmd's default repeats the last command
        return self.onecmd("")

    def _set_prompt(self) -> None:
        if self.interactive:
            self.prompt = CONTINUATION if self.buffer else PROMPT

    def cancel_statement(self) -> None:
        """Ctrl-C: drop the statement being typed, stay in the shell."""
        self.buffer = []
        self._set_prompt()
        self.stdout.write("\n")

    # ------------------------------------------------------------ output

    def _print(self, text: str) -> None:
        self.stdout.write(text if text.endswith("\n") else text + "\n")

    def _error(self, message: str) -> None:
        self.failures += 1
        self.stderr.write(f"Error: {message}\n")
        self.stderr.flush()

    def _run_sql(self, sql: str, params: list | None = None) -> None:
        try:
            relation = self.con.sql(sql, params=params)
            frame = relation.pl() if relation is not None else None
        except duckdb.Error as err:
            self._error(str(err))
            return
        self._print("ok" if frame is None else render(frame, self.mode))

    # ------------------------------------------------------------ dot commands

    def _dot(self, line: str) -> bool:
        try:
            name, *args = shlex.split(line)
        except ValueError as err:
            self._error(f"{line}: {err}")
            return False
        handlers = {
            ".tables": self._tables,
            ".schema": self._schema,
            ".saved": self._saved,
            ".run": self._run_saved,
            ".mode": self._mode,
            ".help": lambda *_: self._print(HELP),
        }
        if name in (".quit", ".exit"):
            return True
        if name not in handlers:
            self._error(f"unknown command {name} (.help lists them)")
        else:
            handlers[name](*args)
        return False

    def _tables(self, *_: str) -> None:
        self._run_sql(
            "SELECT CASE WHEN table_schema = 'main' THEN table_name "
            "ELSE table_schema || '.' || table_name END AS name "
            "FROM information_schema.tables ORDER BY table_schema <> 'main', table_schema, name"
        )

    def _schema(self, table: str = "", *_: str) -> None:
        if not table:
            self._error(".schema needs a table name (.tables lists them)")
            return
        schema, _, name = table.rpartition(".")
        found = self.con.sql(
            "SELECT column_name AS column, data_type AS type FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            params=[schema or "main", name],
        ).pl()
        if found.height == 0:
            self._error(f"no table {table} (.tables lists them)")
        else:
            self._print(render(found, self.mode))

    def _saved(self, *_: str) -> None:
        for name, query in saved_queries().items():
            self._print(f"{name}\n    {query.description}")

    def _run_saved(self, name: str = "", *_: str) -> None:
        known = saved_queries()
        if name not in known:
            self._error(f"no saved query {name!r} (.saved lists them)")
        else:
            self._run_sql(known[name].sql)

    def _mode(self, mode: str = "", *_: str) -> None:
        if mode not in ("table", "csv"):
            self._error(".mode is table or csv")
        else:
            self.mode = mode


def run_shell(
    warehouse: Path,
    *,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    interactive: bool,
    mode: str = "table",
) -> int:
    """Run the shell on `warehouse` (read-only) until `.quit` or end of input; returns 0, or 1
    when a statement or command failed in non-interactive use."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        shell = WarehouseShell(
            con, stdin=stdin, stdout=stdout, stderr=stderr, interactive=interactive, mode=mode
        )
        intro = f"turnlake shell on {warehouse} (read-only); .help for help, .quit to leave"
        if interactive:
            shell.stdout.write(intro + "\n")
        while True:
            try:
                shell.cmdloop(intro="")
                break
            except KeyboardInterrupt:
                shell.cancel_statement()
    return 1 if shell.failures and not interactive else 0
