"""A build's progress as `turnlake` log records, instead of Dagster's console log lines.

The build job runs with one Dagster logger, `turnlake_progress`, whose records are turned into
`turnlake.progress` records carrying a `Progress` (`record.progress`): the step plan, each step
starting / ending, each source's files when its bronze asset is written, and the steps' own
messages. The CLI draws them as a progress display or prints one line per step; a Python caller
gets them as log records (or nothing, without a handler).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Dagster and the ingest code only once a run starts: `turnlake build` with
    # nothing changed, and the other commands, never start one (their import is ~1 s of CPU)
    import dagster as dg

PROGRESS_LOGGER = "turnlake.progress"
BRONZE_PREFIX = "bronze_"


@dataclass(frozen=True)
class Progress:
    """One thing that happened in a build run.

    kind: "plan" (total = steps), "step_start", "step_done", "step_failed", "parsing" (while a
    bronze step parses: done = files parsed so far, total = files to parse, of `source`),
    "source" (when it ends: done = files parsed, total = files seen), "message" (a step's own
    log line, at its level).
    """

    kind: str
    step: str | None = None
    source: str | None = None
    done: int = 0
    total: int = 0
    text: str = ""


def emit(progress: Progress, level: int = logging.INFO) -> None:
    """Log `progress` on the `turnlake.progress` logger (message = its text)."""
    logging.getLogger(PROGRESS_LOGGER).log(level, progress.text, extra={"progress": progress})


def _source_files(event: dg.DagsterEvent) -> Progress | None:
    """files parsed / files seen of a bronze asset's materialization (its metadata)."""
    materialization = event.step_materialization_data.materialization
    name = materialization.asset_key.to_user_string()
    metadata = materialization.metadata
    if not name.startswith(BRONZE_PREFIX) or "files_seen" not in metadata:
        return None
    seen, parsed = metadata["files_seen"].value, metadata["files_parsed"].value
    return Progress(
        "source",
        step=event.step_key,
        source=name.removeprefix(BRONZE_PREFIX),
        done=int(parsed),
        total=int(seen),
        text=f"{name.removeprefix(BRONZE_PREFIX)}: {parsed} of {seen} files parsed",
    )


def translate(record: logging.LogRecord) -> tuple[Progress, int] | None:
    """The `Progress` (and level) a Dagster log record stands for; None for the rest."""
    from pipelines.ingest.incremental import read_parsing_message

    meta = getattr(record, "dagster_meta", None) or {}
    event: dg.DagsterEvent | None = meta.get("dagster_event")
    step = meta.get("step_key")
    if event is None:
        text = meta.get("orig_message", record.getMessage())
        if parsing := read_parsing_message(text):
            source, done, total = parsing
            return Progress("parsing", step, source, done, total, text), logging.DEBUG
        return Progress("message", step=step, text=text), record.levelno
    if event.is_step_start:
        return Progress("step_start", step=step, text=f"{step} started"), logging.INFO
    if event.is_step_success:
        return Progress("step_done", step=step, text=f"{step} done"), logging.INFO
    if event.is_step_failure:
        error = event.step_failure_data.error
        while error is not None and error.cause is not None:  # Dagster's wrapper → the cause
            error = error.cause
        detail = error.message.strip() if error else "failed"
        return Progress("step_failed", step=step, text=f"{step}: {detail}"), logging.ERROR
    if event.is_step_materialization:
        source = _source_files(event)
        return (source, logging.INFO) if source else None
    return None


class _Forward(logging.Handler):
    """Dagster records → `turnlake.progress`; a step's own messages only from `message_level`."""

    def __init__(self, message_level: int) -> None:
        super().__init__()
        self.message_level = message_level

    def emit(self, record: logging.LogRecord) -> None:
        try:
            translated = translate(record)
        except Exception:  # noqa: BLE001 - showing progress must never fail a step
            self.handleError(record)
            return
        if translated is None:
            return
        progress, level = translated
        if progress.kind != "message" or level >= self.message_level:
            emit(progress, level)


def turnlake_progress(init_context) -> logging.Logger:
    # A fresh, unregistered logger per run (as Dagster's console logger does), so handlers of
    # earlier runs in this process never pile up; DEBUG because Dagster logs step events there.
    logger = logging.Logger("turnlake_progress_dagster", level=logging.DEBUG)  # noqa: LOG001
    level = logging.getLevelName(init_context.logger_config["log_level"].upper())
    logger.addHandler(_Forward(level))
    return logger


def with_progress(job: dg.JobDefinition, log_level: str) -> tuple[dg.JobDefinition, dict]:
    """The job logging through `turnlake_progress` only (steps' messages from `log_level`), and
    the run config selecting it; emits the plan (how many steps the run has)."""
    import dagster as dg

    steps = len(job.graph.nodes)
    emit(Progress("plan", total=steps, text=f"build: {steps} steps"))
    logger = dg.LoggerDefinition(
        turnlake_progress,
        config_schema={"log_level": dg.Field(str, default_value="INFO")},
        description="Forwards a run's steps and messages to the `turnlake.progress` logger.",
    )
    job = job.with_logger_defs({"turnlake_progress": logger})
    return job, {"loggers": {"turnlake_progress": {"config": {"log_level": log_level}}}}
