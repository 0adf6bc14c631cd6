"""What an ingest parses, as tasks: batches of whole files, and the parts of big files
(pipelines/ingest/split.py), run in worker processes when there are enough of them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import polars as pl

from pipelines.config.settings import Settings
from pipelines.ingest.log import INGEST_LOG_SCHEMA, log_frame
from pipelines.ingest.parse import IngestContext, move_into, new_batch, parse_into
from pipelines.ingest.parts import PartDone, file_row, parse_part
from pipelines.ingest.split import SplitFile, plan_split
from pipelines.runtime.collector import without_cyclic_gc
from pipelines.runtime.workers import gives_back_freed_memory, worker_count, worker_pool
from pipelines.sources.base import RawFile


@dataclass
class Written:
    """The log rows of the files an ingest wrote, kept a task's rows at a time as frames: as dicts
    (~1.2 KB each) the rows of a 1 GB corpus's sources held up to ~60 MB in the step's process at
    once, and the heap they left stayed in its RSS for the rest of the build."""

    frames: list[pl.DataFrame] = field(default_factory=list)
    appended: int = 0  # files parsed by their new tail alone

    def add(self, rows: list[dict]) -> None:
        if rows:
            self.appended += sum(row.pop("appended", False) for row in rows)
            self.frames.append(log_frame(rows))

    def frame(self) -> pl.DataFrame:
        return pl.concat(self.frames) if self.frames else pl.DataFrame(schema=INGEST_LOG_SCHEMA)


# A task: the parts of split files first (the longest tasks: both workers start on them), then the
# batches of whole files.
Task = tuple[SplitFile, int] | list[RawFile]


def _chunks(
    files: list[RawFile], sizes: dict[str, int], max_files: int, max_bytes: int
) -> list[list[RawFile]]:
    chunks: list[list[RawFile]] = [[]]
    size = 0
    for file in files:
        if chunks[-1] and (len(chunks[-1]) >= max_files or size >= max_bytes):
            chunks.append([])
            size = 0
        chunks[-1].append(file)
        size += sizes.get(file.rel_path, 0)
    return [c for c in chunks if c]


@gives_back_freed_memory
@without_cyclic_gc
def _parse_chunk(ctx: IngestContext, files: list[RawFile]) -> list[dict]:
    """One batch: parse every file, write its parts, return the log rows (runs in a worker)."""
    batch = new_batch(ctx)
    for file in files:
        parse_into(batch, file, ctx)
    return batch.write(ctx.layout)


def _run(ctx: IngestContext, task: Task) -> list[dict] | PartDone:
    if isinstance(task, tuple):
        return parse_part(ctx, *task)
    return _parse_chunk(ctx, task)


# Starting a worker costs ~1 s of imports (1–2 s before the parse path left out Pandera and pandas;
# 2-core benchmark machine), about what parsing one batch of small files costs: fewer batches than
# this are parsed in this process.
MIN_BATCHES_FOR_WORKERS = 4


def ingest_workers(settings: Settings, n_batches: int) -> int:
    """Worker processes for this many batches to parse (parsing is Python: one core per process)."""
    return worker_count(settings.ingest_workers, n_batches, MIN_BATCHES_FOR_WORKERS)


def _split(ctx: IngestContext, files: list[RawFile], sizes: dict[str, int]) -> list[SplitFile]:
    """The files to parse in parts (a grown file is parsed by its tail: pipelines/ingest/append)."""
    planned = (
        plan_split(f, ctx.settings, sizes.get(f.rel_path, 0))
        for f in files
        if f.rel_path not in ctx.grown
    )
    return [split for split in planned if split is not None]


@without_cyclic_gc
def write_in_batches(
    ctx: IngestContext,
    to_parse: list[RawFile],
    sizes: dict[str, int],
    to_move: list[dict],
    parsed: Callable[[int], None] | None = None,
) -> Written:
    """Parse/move everything given into new parts; the log rows naming them. With more than one
    task to parse and more than one worker, tasks run in worker processes (rows of files moved
    out of a rewritten part are then copied into parts of their own, in this process).
    `parsed(n)` is told how many files are parsed so far after each task (progress display)."""
    report = parsed or (lambda n: None)
    splits = _split(ctx, to_parse, sizes)
    split_names = {s.file.rel_path for s in splits}
    whole = [f for f in to_parse if f.rel_path not in split_names]
    chunks = _chunks(whole, sizes, ctx.settings.ingest_batch_files, ctx.settings.ingest_batch_bytes)
    tasks: list[Task] = [(s, k) for s in splits for k in range(len(s.parts))]
    tasks += chunks
    workers = ingest_workers(ctx.settings, len(tasks))
    written = Written()
    if workers == 1:
        parts = tasks[: len(tasks) - len(chunks)]
        retry, done = _collect(ctx, parts, (_run(ctx, t) for t in parts), report, written)
        _in_this_process(ctx, whole, to_move, written, lambda n: report(done + n))
    else:
        _in_this_process(ctx, [], to_move, written)
        pool = worker_pool(workers)
        retry, _ = _collect(ctx, tasks, pool.map(_run, [ctx] * len(tasks), tasks), report, written)
        # the step's own work comes next (the log, its checks): without the workers' memory
        pool.release_workers()
    # A part not as planned (or failing): its file is parsed whole, here, as before parts.
    _in_this_process(ctx, retry, [], written)
    return written


def _collect(
    ctx: IngestContext,
    tasks: list[Task],
    results: Iterable[list[dict] | PartDone],
    report: Callable[[int], None],
    written: Written,
) -> tuple[list[RawFile], int]:
    """The log rows of the tasks' files into `written`; the split files to parse whole instead,
    and how many files were parsed (a split file counts once its last part is done)."""
    retry: list[RawFile] = []
    pending: dict[str, list[PartDone]] = defaultdict(list)
    done = 0
    for task, result in zip(tasks, results, strict=True):
        if isinstance(task, tuple) and isinstance(result, PartDone):
            split = task[0]
            pending[split.file.rel_path].append(result)
            if len(pending[split.file.rel_path]) < len(split.parts):
                continue
            row = file_row(ctx, split, pending.pop(split.file.rel_path))
            if row is None:
                retry.append(split.file)
            else:
                written.add([row])
            done += 1
        elif isinstance(task, list) and isinstance(result, list):
            written.add(result)
            done += len(task)
        report(done)
    return retry, done


def _in_this_process(
    ctx: IngestContext,
    to_parse: list[RawFile],
    to_move: list[dict],
    written: Written,
    parsed: Callable[[int], None] = lambda n: None,
) -> None:
    limit_files, limit_bytes = ctx.settings.ingest_batch_files, ctx.settings.ingest_batch_bytes
    batch = new_batch(ctx)
    by_part: dict[str, list[dict]] = defaultdict(list)
    for row in to_move:
        by_part[row["part_id"]].append(row)
    work = [(move_into, part_rows) for part_rows in by_part.values()] + [
        (parse_into, f) for f in to_parse
    ]
    done = told = 0
    for add, item in work:
        add(batch, item, ctx)
        done += add is parse_into
        if batch.full(limit_files, limit_bytes):
            written.add(batch.write(ctx.layout))
            batch = new_batch(ctx)
            if done > told:
                parsed(told := done)
    written.add(batch.write(ctx.layout))
    if done > told:
        parsed(done)
