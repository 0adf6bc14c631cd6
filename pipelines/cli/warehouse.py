"""`turnlake sql` (SQL and saved queries over the DuckDB views) and `turnlake status`."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.cli.options import error, print_table, roots


def _print_saved_queries() -> None:
    from pipelines.warehouse.queries import saved_queries

    formatter = click.HelpFormatter()
    formatter.write_dl([(name, item.description) for name, item in saved_queries().items()])
    click.echo(formatter.getvalue(), nl=False)


@click.command()
@roots
@click.argument("query", required=False)
@click.option(
    "--saved",
    metavar="NAME",
    help="Run a saved research query (pipelines/warehouse/queries/NAME.sql) instead of QUERY.",
)
@click.option("--list", "list_saved", is_flag=True, help="List the saved queries and exit.")
def sql(
    raw_root: Path | None,
    data_root: Path | None,
    query: str | None,
    saved: str | None,
    list_saved: bool,
) -> int:
    """Run SQL or a saved query against the DuckDB views.

    QUERY runs against <data root>/warehouse.duckdb, whose views are every silver and gold
    table, bronze.<table> and release.<dataset> (the latest release). Exit 1 on an SQL error.
    """
    from pipelines import api

    if list_saved:
        _print_saved_queries()
        return 0
    try:
        frame = api.query(query, saved=saved, raw_root=raw_root, data_root=data_root)
    except api.QueryFailed as failed:
        error(str(failed))
        return 1
    print_table(f"{frame.height} rows", frame)
    return 0


def _last_run_line(status) -> str:
    run = status.last_run
    if run is None:
        return (
            f"no runs of data root {status.data_root} recorded in the Dagster instance at "
            f"{status.dagster_home}"
        )
    started = run.started and run.started.isoformat(timespec="seconds")
    ended = run.ended and run.ended.isoformat(timespec="seconds")
    return f"last run {run.run_id} ({run.job_name}): {run.status}, started {started}, ended {ended}"


@click.command()
@roots
def status(raw_root: Path | None, data_root: Path | None) -> int:
    """Last run, raw changes, pending tails, quarantine, health.

    The last run is the newest run of this data root (each run is tagged with its roots). Raw
    files new / changed / missing since the last build, pending tails, quarantine by source and
    error kind, freshness per source, raw files no adapter reads, whether what is published
    reads back. Exit 1 when a published table or view does not read back.
    """
    from pipelines import api
    from pipelines.cli.build import print_unrecognised

    state = api.status(raw_root=raw_root, data_root=data_root)
    click.echo(_last_run_line(state))
    print_table("Raw files changed since the last build", state.raw.changes)
    print_table("Pending tails", state.raw.pending)
    print_table("Quarantined records by source and error kind", state.quarantine)
    print_table("Freshness per source", state.raw.freshness)
    print_unrecognised(state.raw.unrecognised, state.raw_root)
    for problem in state.problems:
        error(f"PROBLEM {problem}")
    health = "OK" if state.ok else f"{len(state.problems)} problems"
    click.echo(f"\npublished tables and views: {health}")
    return 0 if state.ok else 1
