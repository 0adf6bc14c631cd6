"""How `turnlake build` shows its progress: a live display per step and per source on a terminal
(rich), one plain line per finished step otherwise (logs, CI, pipes)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import click

from pipelines.api.progress import PROGRESS_LOGGER, Progress


class PlainLines(logging.Handler):
    """`[k/N] step  1.2 s  <the step's last message>` when a step ends; failures and warnings
    at once."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.finished = 0
        self.started: dict[str, float] = {}
        self.last_message: dict[str, str] = {}

    def line(self, progress: Progress, level: int) -> str | None:
        """The line to print for one progress record, if any (pure but for the clock)."""
        step = progress.step or ""
        if progress.kind == "plan":
            self.total = progress.total
            return progress.text
        if progress.kind == "step_start":
            self.started[step] = time.monotonic()
            return None
        if progress.kind == "message":
            if level >= logging.WARNING:
                return f"{step}: {logging.getLevelName(level)}: {progress.text}"
            self.last_message[step] = progress.text
            return None
        if progress.kind in ("step_done", "step_failed"):
            self.finished += 1
            seconds = time.monotonic() - self.started.pop(step, time.monotonic())
            outcome = self.last_message.pop(step, "") if progress.kind == "step_done" else ""
            if progress.kind == "step_failed":
                outcome = f"FAILED: {progress.text.removeprefix(f'{step}: ')}"
            return f"[{self.finished}/{self.total}] {step}  {seconds:.1f} s  {outcome}".rstrip()
        return None  # "parsing", "source": their numbers are in the step's own message

    def emit(self, record: logging.LogRecord) -> None:
        progress = getattr(record, "progress", None)
        if progress is not None and (text := self.line(progress, record.levelno)):
            click.echo(text)


class LiveDisplay(logging.Handler):
    """A rich progress display: one bar for the steps, one per source (files parsed / seen)."""

    def __init__(self, progress_bars) -> None:
        super().__init__()
        self.bars = progress_bars
        self.steps = self.bars.add_task("steps", total=None)
        self.sources: dict[str, object] = {}  # source → its bar

    def emit(self, record: logging.LogRecord) -> None:
        progress: Progress | None = getattr(record, "progress", None)
        if progress is None:
            return
        if progress.kind == "plan":
            self.bars.update(self.steps, total=progress.total)
        elif progress.kind == "step_start":
            self.bars.update(self.steps, description=f"steps: {progress.step}")
        elif progress.kind in ("step_done", "step_failed"):
            self.bars.advance(self.steps)
            if progress.kind == "step_failed":
                self.bars.console.print(f"[red]FAILED[/red] {progress.text}", markup=True)
        elif progress.kind == "parsing":
            self._source_bar(progress.source, f"  {progress.source}: parsing", progress.total)
            self.bars.update(self.sources[progress.source], completed=progress.done)
        elif progress.kind == "source":
            unchanged = progress.total - progress.done
            text = f"  {progress.source}: {progress.done} parsed, {unchanged} unchanged"
            self._source_bar(progress.source, text, progress.total)
            self.bars.update(self.sources[progress.source], completed=progress.total)
        elif record.levelno >= logging.WARNING:
            self.bars.console.print(f"{progress.step}: {progress.text}", markup=False)

    def _source_bar(self, source: str, description: str, total: int) -> None:
        if source not in self.sources:
            self.sources[source] = self.bars.add_task(description, total=total)
        self.bars.update(self.sources[source], description=description, total=total)


@contextmanager
def build_progress(terminal: bool) -> Iterator[None]:
    """Show the build's `turnlake.progress` records for the duration of the block."""
    logger = logging.getLogger(PROGRESS_LOGGER)
    propagate = logger.propagate
    logger.propagate = False  # the progress handler shows them, not the plain echo of `turnlake`
    if terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        bars = Progress(
            "{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        )
        handler: logging.Handler = LiveDisplay(bars)
        bars.start()
    else:
        handler = PlainLines()
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        if terminal:
            bars.stop()
