"""Raw files → bronze rows in batches: parse (in worker processes when there is much to parse),
type, write one part per batch and table. Pure functions; ingest/incremental.py decides what to
parse."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pipelines.config.settings import Settings
from pipelines.ingest import append
from pipelines.ingest.arrow_typed import ARROW_TYPED_SOURCES, ArrowTypedBatch
from pipelines.ingest.batches import Batch, rows_of_files
from pipelines.privacy.forget import mentions_text, purge
from pipelines.runtime.collector import without_cyclic_gc
from pipelines.runtime.workers import gives_back_freed_memory, worker_count, worker_pool
from pipelines.sources import adapter
from pipelines.sources.base import ParseResult, QuarantineRow, RawFile, raw_excerpt, too_large_file
from pipelines.storage.layout import Layout


def without_forgotten(result: ParseResult, forgotten: list[str]) -> tuple[ParseResult, int]:
    if not forgotten:
        return result, 0
    removed = 0
    for table, frame in result.tables.items():
        kept, n = purge(frame, forgotten)
        result.rows[table] = kept.to_dicts()
        removed += n
    kept = [
        q
        for q in result.quarantine
        if not mentions_text(f"{q.locator}\0{q.message}\0{q.raw or ''}", forgotten)
    ]
    removed += len(result.quarantine) - len(kept)
    result.quarantine = kept
    return result, removed


def _safe_parse(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    """Parse with the adapter; an adapter bug on one file quarantines that file, never the run."""
    try:
        return adapter(file.source).parse_file(file, data, settings)
    except Exception as exc:  # noqa: BLE001 — turned into a specific, visible quarantine row
        return ParseResult(
            records_read=1,
            quarantine=[
                QuarantineRow(
                    file.source,
                    file.rel_path,
                    "file",
                    "unreadable",
                    f"the {file.source} adapter failed on this file: {type(exc).__name__}: {exc}",
                    raw_excerpt(data, settings.limits.raw_excerpt_chars),
                )
            ],
        )


def file_id(fingerprint: str, version: str, settings_key: str) -> str:
    return hashlib.sha256(f"{fingerprint}:{version}:{settings_key}".encode()).hexdigest()[:16]


def read_raw(file: RawFile, settings: Settings) -> tuple[bytes | None, str, int, int]:
    """Bytes (None when over the size limit), fingerprint, size and modification time (taken
    before reading, so a write during the read shows as a change next time) of a raw file."""
    size, mtime_ns = file.stat()  # an object's: from the listing that found it
    if size > settings.limits.max_file_bytes:
        return None, f"size:{size}:mtime:{mtime_ns}", size, mtime_ns
    data = file.read_bytes()
    return data, hashlib.sha256(data).hexdigest(), len(data), mtime_ns


@dataclass(frozen=True)
class IngestContext:
    layout: Layout
    settings: Settings
    source: str
    version: str
    settings_key: str
    forgotten: list[str]
    run_id: str
    grown: dict[str, dict] = field(default_factory=dict)  # file → log row: try its tail alone


def _new_batch(ctx: IngestContext) -> Batch:
    kind = ArrowTypedBatch if ctx.source in ARROW_TYPED_SOURCES else Batch
    return kind(ctx.source, ctx.run_id, ctx.settings.limits.raw_excerpt_chars)


def _read(
    file: RawFile, ctx: IngestContext
) -> tuple[bytes | None, str, int, int, append.Tail | None]:
    """A file's bytes, fingerprint, size, mtime and, for a file proven to have only grown since its
    log row, its old rows and parsed tail (pipelines/ingest/append.py)."""
    prev = ctx.grown.get(file.rel_path)
    if prev is None:
        return (*read_raw(file, ctx.settings), None)
    data, fingerprint, size, mtime_ns, prefix = append.read_grown(
        file, ctx.settings, prev["size_bytes"]
    )
    tail = None
    if data is not None and prefix == prev["fingerprint"]:
        tail = append.tail_of(ctx.layout, ctx.settings, file, prev, data, ctx.forgotten)
    return data, fingerprint, size, mtime_ns, tail


def parse_into(batch: Batch, file: RawFile, ctx: IngestContext) -> None:
    # Fingerprint the bytes actually parsed: a file appended to since planning gets its new id.
    data, fingerprint, size, mtime_ns, tail = _read(file, ctx)
    limit = ctx.settings.limits.max_file_bytes
    if tail is not None:
        result = tail.result
    elif data is None:
        result = too_large_file(file, size, limit)
    else:
        result = _safe_parse(file, data, ctx.settings)
    result, n_forgotten = without_forgotten(result, ctx.forgotten)
    kept_bronze, kept_quarantine = (tail.kept_rows(False), tail.kept_rows(True)) if tail else (0, 0)
    batch.add_parsed(
        {
            "source": file.source,
            "file": file.rel_path,
            "fingerprint": fingerprint,
            "size_bytes": size,
            "mtime_ns": mtime_ns,
            "parser_version": ctx.version,
            "parse_settings": ctx.settings_key,
            "file_id": file_id(fingerprint, ctx.version, ctx.settings_key),
            "part_id": None,
            "records_read": result.records_read + kept_bronze + kept_quarantine,
            "n_bronze": result.n_bronze + kept_bronze,
            "n_quarantine": len(result.quarantine) + kept_quarantine,
            "n_pending": len(result.pending),
            "n_forgotten": n_forgotten,
            "pending_locators": [p.locator for p in result.pending],
            "run_id": ctx.run_id,
            "parsed_at": datetime.now(UTC),
            "missing_since": None,
            "appended": tail is not None,  # for the report; not a log column
        },
        result,
        data,
        tail.kept if tail else None,
    )


def move_into(batch: Batch, rows: list[dict], ctx: IngestContext) -> None:
    """Copy unchanged files' rows out of their old part (all from the same part); a file whose rows
    were made under other parse settings (a vanished file, when a subject was forgotten since) is
    purged on the way."""
    tables = {t for row in rows for t in row["tables"]}
    copied, purged = rows_of_files(
        ctx.layout, ctx.source, rows[0]["part_id"], tables, [r["file"] for r in rows], ctx.forgotten
    )
    for row in rows:
        if row["parse_settings"] != ctx.settings_key:
            row = {
                **row,
                "parse_settings": ctx.settings_key,
                "n_forgotten": row["n_forgotten"] + purged[row["file"]],
                "file_id": file_id(row["fingerprint"], row["parser_version"], ctx.settings_key),
            }
        batch.add_moved(row, copied[row["file"]])


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
    batch = _new_batch(ctx)
    for file in files:
        parse_into(batch, file, ctx)
    return batch.write(ctx.layout)


# Starting a worker costs 1–2 s of imports (measured on the 2-core benchmark machine), about what
# parsing one batch of small files costs: fewer batches than this are parsed in this process.
MIN_BATCHES_FOR_WORKERS = 4


def ingest_workers(settings: Settings, n_batches: int) -> int:
    """Worker processes for this many batches to parse (parsing is Python: one core per process)."""
    return worker_count(settings.ingest_workers, n_batches, MIN_BATCHES_FOR_WORKERS)


@without_cyclic_gc
def write_in_batches(
    ctx: IngestContext,
    to_parse: list[RawFile],
    sizes: dict[str, int],
    to_move: list[dict],
    parsed: Callable[[int], None] | None = None,
) -> list[dict]:
    """Parse/move everything given into new parts; the log rows naming them. With more than one
    batch to parse and more than one worker, batches are parsed in worker processes (rows of files
    moved out of a rewritten part are then copied into parts of their own, in this process).
    `parsed(n)` is told how many files are parsed so far after each batch (progress display)."""
    parsed = parsed or (lambda n: None)
    chunks = _chunks(
        to_parse, sizes, ctx.settings.ingest_batch_files, ctx.settings.ingest_batch_bytes
    )
    workers = ingest_workers(ctx.settings, len(chunks))
    if workers == 1:
        return _in_this_process(ctx, to_parse, to_move, parsed)
    rows = _in_this_process(ctx, [], to_move, parsed)
    done = 0
    results = worker_pool(workers).map(_parse_chunk, [ctx] * len(chunks), chunks)
    for chunk, chunk_rows in zip(chunks, results, strict=True):
        rows.extend(chunk_rows)
        done += len(chunk)
        parsed(done)
    return rows


def _in_this_process(
    ctx: IngestContext,
    to_parse: list[RawFile],
    to_move: list[dict],
    parsed: Callable[[int], None] = lambda n: None,
) -> list[dict]:
    limit_files, limit_bytes = ctx.settings.ingest_batch_files, ctx.settings.ingest_batch_bytes
    rows: list[dict] = []
    batch = _new_batch(ctx)
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
            rows.extend(batch.write(ctx.layout))
            batch = _new_batch(ctx)
            if done > told:
                parsed(told := done)
    rows.extend(batch.write(ctx.layout))
    if done > told:
        parsed(done)
    return rows
