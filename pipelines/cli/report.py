"""`turnlake report`: write the HTML build report of the data root and print its path."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.cli.options import roots


def open_in_browser(path: Path) -> None:
    """Open the report in the desktop's browser, or say how to when there is none."""
    import webbrowser

    if not webbrowser.open(path.resolve().as_uri()):
        click.echo(f"no browser found here: open {path} in one (it needs no network)")


@click.command()
@roots
@click.option("--open", "open_report", is_flag=True, help="Open the report in a web browser.")
def report(raw_root: Path | None, data_root: Path | None, open_report: bool) -> int:
    """Write the HTML build report of the data root; print its path.

    One self-contained file (plots drawn in, no network needed) under <data root>/reports/,
    also copied to reports/latest.html: reward distributions, agreement by IQL policy and
    character, Q-values over turns, agent engagement over rounds, quarantine by kind over nights,
    split sizes, reconciliation, the last build's check results, the release's contents and its
    changes since the previous release. Every `turnlake build` writes one too.
    """
    from pipelines import api

    path = api.report(raw_root=raw_root, data_root=data_root)
    click.echo(f"report: {path}")
    if open_report:
        open_in_browser(path)
    return 0
