"""`turnlake subject show KIND ID` (every row about a subject) and `turnlake forget KIND ID`."""

from __future__ import annotations

from pathlib import Path

import click

from pipelines.cli.options import error, roots, wait
from pipelines.privacy.subjects import SUBJECT_KINDS
from pipelines.runtime.text_tables import box_table

_KIND = click.argument("kind", type=click.Choice(SUBJECT_KINDS))
_ID = click.argument("subject_id", metavar="ID")


@click.group()
def subject() -> None:
    """Review what the warehouse holds about one subject."""


@subject.command()
@roots
@_KIND
@_ID
def show(raw_root: Path | None, data_root: Path | None, kind: str, subject_id: str) -> int:
    """Every silver and gold row about subject ID of KIND."""
    from pipelines import api

    rows = api.subject_rows(kind, subject_id, raw_root=raw_root, data_root=data_root)
    for name, frame in rows.items():
        if frame.height:
            click.echo(f"\n{name}: {frame.height} rows")
            click.echo(box_table(frame, max_chars=60, max_rows=20, max_cols=8))
    total = sum(frame.height for frame in rows.values())
    tables = sum(1 for frame in rows.values() if frame.height)
    click.echo(f"\n{kind} {subject_id}: {total} rows across {tables} tables")
    return 0


@click.command()
@roots
@_KIND
@_ID
@wait
def forget(
    raw_root: Path | None, data_root: Path | None, kind: str, subject_id: str, wait: float
) -> int:
    """Forget a subject in silver, gold and every release.

    Records a tombstone for subject ID of KIND (a keyed hash, no id), rebuilds without the
    subject, rewrites every existing release without its rows, and lists raw files named after
    it for erasure at the source. Exit 1 when the rebuild fails or a rewritten release does
    not verify; exit 3 when the data root is busy, also while Dagster partition runs are
    pending (nothing is done: build, then forget again).
    """
    from pipelines import api
    from pipelines.cli.build import print_build_result

    try:
        forgotten = api.forget(kind, subject_id, raw_root=raw_root, data_root=data_root, wait=wait)
    except api.BuildFailed as failed:
        print_build_result(failed.result)
        error("turnlake forget: the rebuild failed; releases were not rewritten")
        return 1
    print_build_result(forgotten.build)
    for version, rows in forgotten.rewritten.items():
        click.echo(f"release {version}: {rows} rows removed (manifest deletion log updated)")
    for problem in forgotten.problems:
        error(f"MISMATCH {problem}")
    if forgotten.raw_files:
        click.echo(
            f"{len(forgotten.raw_files)} raw files are named after the subject; turnlake no "
            "longer reads them — erase them at the source:"
        )
        for path in forgotten.raw_files:
            click.echo(f"  {path}")
    if forgotten.problems:
        click.echo(f"forgotten, but {len(forgotten.problems)} release problems")
        return 1
    click.echo("forgotten; every release verifies")
    return 0
