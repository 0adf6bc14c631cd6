"""What the commands share: the root options, `--wait`, progress lines and printed tables."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import polars as pl

F = Callable[..., Any]


class RootType(click.ParamType):
    """A root: a local folder (a Path, as click.Path gives) or an `s3://bucket/prefix` URI kept
    as it is (click.Path would fold its `//`)."""

    name = "PATH|URI"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from pipelines.storage.objects import ObjectRoot, ObjectStoreError

        text = str(value)
        if "://" not in text:
            return Path(text)
        try:
            ObjectRoot.parse(text)
        except ObjectStoreError as err:
            self.fail(str(err), param, ctx)
        return text


ROOT = RootType()


def roots(func: F) -> F:
    """`--raw-root` and `--data-root` (passed to the API as `raw_root` / `data_root`)."""
    func = click.option(
        "--data-root",
        type=ROOT,
        help="Root of the warehouse, exports and DuckDB file: a folder or s3://bucket/prefix "
        "(default data, env TURNLAKE_DATA_ROOT).",
    )(func)
    return click.option(
        "--raw-root",
        type=ROOT,
        help="Landing root of raw files: a folder or s3://bucket/prefix (default data/raw, "
        "or <data root>/raw when only "
        "--data-root is given; env TURNLAKE_RAW_ROOT).",
    )(func)


def wait(func: F) -> F:
    """`--wait SECONDS`: how long to wait for another build's lock on the data root."""
    return click.option(
        "--wait",
        type=float,
        default=0.0,
        show_default=True,
        metavar="SECONDS",
        help="If another build holds the data root, wait this long before giving up (exit 3).",
    )(func)


class _EchoHandler(logging.Handler):
    """The API's progress lines (`turnlake` logger) on stdout, where the summary goes."""

    def emit(self, record: logging.LogRecord) -> None:
        progress = getattr(record, "progress", None)  # a build run's step events: too chatty
        if progress is None or progress.kind in ("message", "step_failed"):
            click.echo(self.format(record))


def show_progress() -> None:
    """Print the API's progress lines; once per process, however many commands run in it."""
    logger = logging.getLogger("turnlake")
    if not any(isinstance(handler, _EchoHandler) for handler in logger.handlers):
        logger.addHandler(_EchoHandler())
        logger.setLevel(logging.INFO)
        logger.propagate = False


def error(message: str) -> None:
    click.echo(message, err=True)


def print_table(title: str, frame: pl.DataFrame) -> None:
    """A titled table in a console box, every row and column."""
    from pipelines.runtime.text_tables import box_table

    click.echo(f"\n{title}")
    if frame.height == 0:
        click.echo("  (none)")
        return
    click.echo(box_table(frame))
