"""`turnlake release | releases | verify | pull`: versioned training sets for trainers."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from pipelines.cli.options import error, roots, wait
from pipelines.storage.uri import is_remote


def print_load_hint(path: Path) -> None:
    """How to load the release at `path`: Python (turnlake or datasets) and DuckDB."""
    if is_remote(path):
        _print_remote_load_hint(path)
        return
    data_root, sft = path.parents[1], path / "sft"
    root = shlex.quote(str(data_root))  # the warehouse of this release's data root, not the default
    lines = [
        f"release: {path}",
        "  Python:  import turnlake",
        (
            f'           ds = turnlake.load_release("{path.name}", config="sft", '
            f'data_root="{data_root}")'
        ),
        f'           or: datasets.load_dataset("{path}", "sft")   (any config its card lists)',
        (
            f"  DuckDB:  turnlake sql --data-root {root} "
            '"SELECT split, count(*) FROM release.sft GROUP BY ALL"'
            "   (views over the latest release)"
        ),
        f"           or read_parquet('{sft}/*.parquet') for any version",
        f"  Shell:   turnlake shell --data-root {root}   (interactive SQL over the same views)",
    ]
    click.echo("\n" + "\n".join(lines))


def _print_remote_load_hint(path: Path) -> None:
    """The hint for a release under an S3 data root: what reads it from there (datasets and
    DuckDB here cannot read `s3://` themselves)."""
    data_root = shlex.quote(str(path.parents[1]))
    lines = [
        f"release: {path}",
        "  Python:  import turnlake",
        (
            f'           ds = turnlake.load_release("{path.name}", config="sft", '
            f'data_root="{path.parents[1]}")   (a verified local copy)'
        ),
        f"  Copy:    turnlake pull {path.name} --to DIR --data-root {data_root}",
        (
            f"  DuckDB:  turnlake sql --data-root {data_root} "
            '"SELECT split, count(*) FROM release.sft GROUP BY ALL"'
            "   (views over the latest release)"
        ),
    ]
    click.echo("\n" + "\n".join(lines))


def store_option(func):
    """`--store URI`: the release store to read (default `[release] store`, else the exports)."""
    return click.option(
        "--store",
        metavar="URI",
        help="Release store: a folder or s3://bucket/prefix (default: [release] store in "
        "turnlake.toml, else <data root>/exports). S3 settings from the AWS_* variables.",
    )(func)


def _print_mismatch(mismatch) -> None:
    for problem in mismatch.problems:
        error(f"MISMATCH {problem}")
    click.echo(f"release {mismatch.version}: {len(mismatch.problems)} problems")


@click.command()
@roots
@wait
@click.option(
    "--as-of",
    "as_of",
    metavar="TIMESTAMP",
    help="Build from the tables as they were then (ISO 8601, e.g. 2026-11-23T21:00Z; naive: UTC).",
)
def release(raw_root: Path | None, data_root: Path | None, wait: float, as_of: str | None) -> int:
    """Write a release from the current build and verify it.

    The build does this too; identical inputs reuse the existing version. Exit 1 when the
    release is refused (leakage, not trainable) or does not verify.
    """
    from pipelines import api
    from pipelines.release.assemble import NOTHING_TO_RELEASE
    from pipelines.storage.tables import parse_time

    if as_of is not None:
        try:
            parse_time(as_of)
        except ValueError:
            raise click.BadParameter(f"not an ISO 8601 timestamp: {as_of!r}", param_hint="--as-of")
    try:
        state = api.release(raw_root=raw_root, data_root=data_root, wait=wait, as_of=as_of)
    except api.LeakageError as leak:
        error(f"turnlake release: refused, the split proof found leakage: {leak}")
        return 1
    except api.UntrainableRelease as untrainable:
        error(f"turnlake release: refused, the release would not be trainable: {untrainable}")
        return 1
    except api.ReleaseMismatch as mismatch:
        _print_mismatch(mismatch)
        return 1
    if state is None:
        click.echo(NOTHING_TO_RELEASE)
        return 0
    kind = "new release" if state.created else "unchanged inputs: existing release"
    click.echo(f"{kind} {state.version} (verified)")
    if state.published:
        click.echo(f"published to {state.published} (verified there)")
    print_load_hint(state.path)
    return 0


@click.command()
@roots
@store_option
def releases(raw_root: Path | None, data_root: Path | None, store: str | None) -> int:
    """List complete releases: version, date, rows per dataset."""
    from pipelines import api

    frame = api.releases(data_root=data_root, store=store)
    click.echo(str(frame) if frame.height else "no releases yet")
    return 0


@click.command()
@roots
@store_option
@click.argument("version", required=False)
def verify(
    raw_root: Path | None, data_root: Path | None, store: str | None, version: str | None
) -> int:
    """Re-hash a release against its manifest and split proof.

    VERSION defaults to the latest release; row counts are re-checked too. Exit 1 on any
    mismatch.
    """
    from pipelines import api

    try:
        state = api.verify(version, data_root=data_root, store=store)
    except api.ReleaseMismatch as mismatch:
        _print_mismatch(mismatch)
        return 1
    click.echo(f"release {state.version}: verified")
    return 0


@click.command()
@roots
@store_option
@click.argument("version")
@click.option(
    "--to",
    required=True,
    metavar="DIR|s3://BUCKET/PREFIX",
    help="Destination: a folder (the release lands in <to>/<version>) or an S3 store "
    "(published there: files, manifest, then LATEST).",
)
def pull(
    raw_root: Path | None, data_root: Path | None, store: str | None, version: str, to: str
) -> int:
    """Copy a release to a folder or an S3 store and verify the copy.

    VERSION (or `latest`) lands in <to>/VERSION: in a folder copied to a temporary folder, then
    renamed; on S3 its files, then its manifest (put-if-absent), then LATEST moved forward
    (compare-and-swap; exit 3 if another publisher moved it meanwhile).
    """
    from pipelines import api

    try:
        state = api.pull(version, to, data_root=data_root, store=store)
    except api.ReleaseMismatch as mismatch:
        _print_mismatch(mismatch)
        return 1
    click.echo(f"pulled {state.version} to {state.path}: verified")
    return 0
