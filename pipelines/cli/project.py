"""`turnlake dictionary` (the generated data dictionary) and `turnlake dev` (`dg dev`)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pipelines.cli.options import error, roots


@click.command()
@click.option(
    "--check",
    is_flag=True,
    help="Do not write; exit 1 if docs/data_dictionary.md or assets/column_schemas.json is stale.",
)
def dictionary(check: bool) -> int:
    """Regenerate docs/data_dictionary.md and the column schemas.

    Both from the Pandera models: the data dictionary, and assets/column_schemas.json (the column
    schemas the Dagster assets show, which they read without importing Pandera).
    """
    from pipelines.reports.column_schemas import (
        COLUMN_SCHEMAS_PATH,
        render_column_schemas,
        write_column_schemas,
    )
    from pipelines.reports.dictionary import DICTIONARY_PATH, render_dictionary, write_dictionary

    if not check:
        click.echo(f"wrote {write_dictionary()}")
        click.echo(f"wrote {write_column_schemas()}")
        return 0
    stale = [
        path
        for path, render in (
            (DICTIONARY_PATH, render_dictionary),
            (COLUMN_SCHEMAS_PATH, render_column_schemas),
        )
        if (path.read_text(encoding="utf-8") if path.exists() else "") != render()
    ]
    for path in stale:
        error(f"{path} is stale: run `turnlake dictionary`")
    if stale:
        return 1
    click.echo(f"{DICTIONARY_PATH} and {COLUMN_SCHEMAS_PATH.name} are up to date")
    return 0


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@roots
@click.argument("dg_args", nargs=-1, type=click.UNPROCESSED, metavar="DG_DEV_OPTIONS")
def dev(raw_root: Path | None, data_root: Path | None, dg_args: tuple[str, ...]) -> int:
    """Start `dg dev` on this project's Dagster instance and roots.

    DG_DEV_OPTIONS, the options it does not know, go to `dg dev` (`turnlake dev --port 3001`).
    """
    from pipelines import api

    settings = api.resolve_settings(raw_root=raw_root, data_root=data_root)
    # Dagster code loaded by `dg dev` reads the same roots and instance from the environment.
    os.environ["TURNLAKE_RAW_ROOT"] = str(settings.raw_root)
    os.environ["TURNLAKE_DATA_ROOT"] = str(settings.data_root)
    os.environ["DAGSTER_HOME"] = str(api.dagster_home(settings))
    os.execvp("dg", ["dg", "dev", *dg_args])
    return 0  # unreachable
