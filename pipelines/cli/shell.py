"""`turnlake shell`: interactive SQL over the warehouse's DuckDB views (read-only)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pipelines.cli.options import roots


@click.command()
@roots
@click.option("--csv", "csv", is_flag=True, help="Print results as CSV (`.mode csv`).")
def shell(raw_root: Path | None, data_root: Path | None, csv: bool) -> int:
    """Interactive SQL over <data root>/warehouse.duckdb, read-only.

    Statements end with `;` and may span lines; `.tables`, `.schema TABLE`, `.saved`,
    `.run NAME` (a saved query), `.mode table|csv`, `.help`, `.quit`. An error is printed and
    the shell goes on. When stdin is not a terminal, SQL is read from it and results printed
    without prompts (exit 1 if a statement failed): `echo "SELECT 1;" | turnlake shell`.
    """
    from pipelines import api
    from pipelines.warehouse.shell import run_shell

    settings = api.resolve_settings(raw_root=raw_root, data_root=data_root)
    warehouse = settings.layout.duckdb
    if not warehouse.exists():
        raise api.NotBuilt(f"no warehouse at {warehouse}: run `turnlake build` first")
    return run_shell(
        warehouse,
        stdin=sys.stdin,
        stdout=sys.stdout,
        stderr=sys.stderr,
        interactive=sys.stdin.isatty(),
        mode="csv" if csv else "table",
    )
