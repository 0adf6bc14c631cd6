"""`turnlake build` and `turnlake demo`, and how a build's result is printed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pipelines.cli.options import error, print_table, roots, wait

if TYPE_CHECKING:
    from pipelines.api import BuildResult


def print_unrecognised(files: list[str], raw_root: Path) -> None:
    from pipelines.reports.summary import unrecognised_lines

    if files:
        click.echo(
            "\nRaw files no adapter reads "
            "(see the raw layouts in docs/concepts/sources.md; these were not ingested)"
        )
        for line in unrecognised_lines(files, raw_root):
            click.echo(f"  {line}")


def _print_latest_release(result: BuildResult) -> None:
    from pipelines.cli.release import print_load_hint
    from pipelines.release.assemble import NOTHING_TO_RELEASE

    latest = result.latest_release
    if result.nothing_to_release:
        earlier = (
            f"; the latest release {latest.version} is from an earlier build" if latest else ""
        )
        click.echo(f"\n{NOTHING_TO_RELEASE}{earlier}")
        return
    if latest is None:
        return
    if result.unchanged_since:
        click.echo(f"latest release {latest.version}: verified (by run {result.run_id})")
    elif latest.verified_in_run:
        click.echo(f"latest release {latest.version}: verified (release_verifies, this run)")
    else:
        state = "verified" if latest.verified else f"{len(latest.problems)} PROBLEMS"
        click.echo(f"latest release {latest.version}: {state}")
    if latest.published:
        click.echo(f"published to {latest.published} (verified there)")
    print_load_hint(latest.path)


def print_build_result(result: BuildResult) -> None:
    """The summary tables, failed checks (stderr), the run, and the latest release."""
    summary = result.summary
    if result.unchanged_since:
        click.echo(
            f"nothing changed since build {result.unchanged_since}: raw files, opt-outs, "
            "settings, parameters, code and data root are as it left them, so no run "
            "(`turnlake build --force` runs anyway)"
        )
    print_table("Rows per silver table", summary.table_rows)
    print_table("Records per source (records read = bronze + quarantined)", summary.reconciliation)
    print_table("Quarantined records by source and error kind", summary.quarantine)
    print_table(
        "Pending tails (incomplete last records of active files, retried next run)", summary.pending
    )
    if any(summary.withheld.values()):
        counts = ", ".join(f"{table} {n}" for table, n in summary.withheld.items() if n)
        click.echo(f"\nWithheld for opted-out subjects (consent/optouts.jsonl): {counts}")
    if summary.missing.height:
        print_table(
            "Raw files that disappeared (rows kept; set [ingest] remove_deleted_files to drop)",
            summary.missing,
        )
    print_unrecognised(summary.unrecognised, result.raw_root)
    if summary.split_warnings:
        click.echo(
            "\nSplits far from the configured ratios (a split takes whole groups; "
            "`turnlake sql --saved split_balance`)"
        )
        for line in summary.split_warnings:
            click.echo(f"  {line}")
    for check in result.failed_checks:
        error(f"FAILED CHECK {check.name}")
    if result.run_ok and summary.release_rows.height:
        print_table("Rows per released dataset and split (latest release)", summary.release_rows)
    outcome = "succeeded" if result.run_ok else "FAILED"
    if result.unchanged_since:
        outcome += " (earlier: nothing changed since)"
    click.echo(f"\nrun {result.run_id}: {outcome}; warehouse: {result.warehouse}")
    if result.run_ok:
        _print_latest_release(result)
    if result.report is not None:
        click.echo(f"\nreport: {result.report}   (open it in a browser; `turnlake report --open`)")


@click.command()
@roots
@click.option(
    "--demo-if-empty", is_flag=True, help="Write demo data first when the raw root is empty."
)
@click.option("--scale", type=int, default=1, show_default=True, help="Demo scale when generating.")
@click.option("--seed", type=int, default=7, show_default=True, help="Demo seed when generating.")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
    default="INFO",
    show_default=True,
    help="Least level of the steps' own messages shown during the run.",
)
@click.option(
    "--revalidate",
    is_flag=True,
    help="Re-run every check on its data, ignoring checks passed before on the same inputs "
    "(env TURNLAKE_REVALIDATE=1).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Steps run in up to N processes at a time (Dagster's multiprocess executor); "
    "1 runs them in this process.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Run the build even when nothing changed since the last successful one.",
)
@wait
def build(raw_root: Path | None, data_root: Path | None, **options) -> int:
    """Materialize the whole asset graph through Dagster.

    When nothing a build reads changed since the last fully successful build of the data root
    (raw files, opt-outs, settings, parameters, code) and the data root is as it left it, says
    so in one line, prints that build's summary and exits 0 without a run (`--force` runs).

    Runs in-process (or with `--workers N` in N step processes, holding the data root for the
    whole run), recorded in the local Dagster instance (visible in `dg dev`), then prints
    rows per table, records per source, quarantine, pending tails, raw files no adapter reads
    and the latest release (verified). Exit 1 when a blocking check fails.
    """
    import sys

    from pipelines import api
    from pipelines.cli.progress import build_progress

    try:
        with build_progress(terminal=sys.stdout.isatty()):
            result = api.build(raw_root=raw_root, data_root=data_root, **options)
    except api.BuildFailed as failed:
        result = failed.result
    print_build_result(result)
    return 0 if result.ok else 1


@click.command()
@roots
@click.option("--scale", type=int, default=1, show_default=True, help="Size multiplier.")
@click.option("--seed", type=int, default=7, show_default=True, help="Random seed.")
def demo(raw_root: Path | None, data_root: Path | None, scale: int, seed: int) -> int:
    """Write realistic demo raw files of every source.

    With every real-world variation and a few bad records of each kind.
    """
    from pipelines import api

    written = api.demo(raw_root=raw_root, data_root=data_root, scale=scale, seed=seed)
    n = sum(1 for p in written.rglob("*") if p.is_file())
    click.echo(f"demo data written under {written} ({n} files, scale {scale}, seed {seed})")
    return 0
