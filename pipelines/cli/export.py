"""`turnlake export minari`: a published release's rows in another library's format, written
outside the release."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from pipelines.cli.options import error, roots, wait


@click.group()
def export() -> None:
    """Write a release in another format (Minari), outside it."""


@export.command()
@roots
@wait
@click.argument("version", default="latest")
@click.option(
    "--to",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Write into DIR/VERSION (default <data root>/minari/VERSION, which `forget` deletes; "
    "a copy elsewhere is yours to delete).",
)
def minari(
    raw_root: Path | None, data_root: Path | None, wait: float, version: str, to: Path | None
) -> int:
    """The rl_steps episodes of VERSION (default latest) as Minari datasets (offline RL).

    One dataset per behaviour policy and split, `turnlake/<view>/<split>-v0`, checked by
    reading every episode back through Minari; prints the MINARI_DATASETS_PATH to load them
    with. Exit 1 when the release's rl_steps files differ from its manifest.
    """
    from pipelines import api
    from pipelines.api.exports import export_minari

    try:
        done = export_minari(version, to=to, data_root=data_root, wait=wait)
    except api.ReleaseMismatch as mismatch:
        for problem in mismatch.problems:
            error(f"MISMATCH {problem}")
        return 1
    click.echo(f"release {done.version}: {len(done.datasets)} Minari datasets in {done.path}")
    for dataset_id, entry in done.datasets.items():
        click.echo(f"  {dataset_id}: {entry['episodes']} episodes, {entry['steps']} steps")
    click.echo(f"\n  export MINARI_DATASETS_PATH={shlex.quote(str(done.path))}")
    first = next((i for i in done.datasets if "/train-" in i), "turnlake/study/train-v0")
    click.echo(f"  python -c \"import minari; print(minari.load_dataset('{first}'))\"")
    return 0
