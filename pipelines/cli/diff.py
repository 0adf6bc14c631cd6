"""`turnlake diff [V1] [V2]`: what changed between two releases."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import orjson

from pipelines.cli.options import error, roots


@click.command()
@click.argument("old", required=False)
@click.argument("new", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON instead of Markdown.")
@roots
def diff(
    old: str | None, new: str | None, as_json: bool, raw_root: Path | None, data_root: Path | None
) -> int:
    """Compare release OLD with NEW (default: the latest two).

    Rows added / removed / changed per dataset and split (matched by row identity), groups that
    moved split, reward and label distribution shift, config, code and raw-file changes. Exit 1
    when a group moved split (splits must never move a group); exit 2 for an unknown release.
    """
    from pipelines import api
    from pipelines.release.card.changelog import diff_markdown

    found = api.diff(old, new, data_root=data_root)
    if as_json:
        click.echo(orjson.dumps(dataclasses.asdict(found), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(f"# {found.old} → {found.new}\n\n{diff_markdown(found)}")
    if found.moved_groups:
        error(f"turnlake diff: {len(found.moved_groups)} groups moved split (must be 0)")
        return 1
    return 0
