"""Parsing one part of a big file (pipelines/ingest/split.py) in a task, and the file's one log row
from its parts'.

A part is parsed with its Span (lines, byte offsets and "is it the file's last record" are the
whole file's), so its rows, ids and quarantine locators are those of a whole-file parse; its rows
are written as `subpart` k of the file's part (pipelines/storage/bronze.py), whose id hashes file,
file_id and where the parts start. The log keeps one row per file, as before: the parts' counts
summed, naming the part.

A part that cannot stand for its share of a whole-file parse makes the file be parsed whole
instead, in the calling process, as before: its bytes are not the planned ones (the file changed
since planning), its adapter failed on it or its rows could not be typed (parsed whole, either
becomes the one quarantine row of the file, as on a file parsed whole). Pieces already written are
then named by no log row: garbage, collected as any other.

A file's parse-quarantine rows keep the order of a whole-file parse (records that are no JSON,
then the records the adapter refused, then rows that do not fit their bronze type): each part
writes each kind as its own subpart, numbered so that sorting them gives that order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from pipelines.ingest.batches import QUARANTINE_PART, in_table_order
from pipelines.ingest.parse import (
    IngestContext,
    file_id,
    log_row,
    new_batch,
    without_forgotten,
)
from pipelines.ingest.split import FilePart, SplitFile, parse_span
from pipelines.runtime.collector import without_cyclic_gc
from pipelines.runtime.workers import gives_back_freed_memory
from pipelines.sources.base import ParseResult, RawFile
from pipelines.storage.bronze import subpart

_SUMMED = ("records_read", "n_bronze", "n_quarantine", "n_pending", "n_forgotten")


@dataclass(frozen=True)
class PartDone:
    index: int
    row: dict | None  # the part's log row as its batch wrote it; None: parse the file whole


def part_id(ctx: IngestContext, split: SplitFile) -> str:
    file = split.file.rel_path
    fid = file_id(split.fingerprint, ctx.version, ctx.settings_key)
    return hashlib.sha256(f"{file}\0{fid}\0{split.part_key()}".encode()).hexdigest()[:20]


def _read_part(file: RawFile, part: FilePart) -> bytes:
    if file.is_remote:  # an object is fetched whole
        return file.read_bytes()[part.span.offset : part.end]
    with open(file.path, "rb") as stream:
        stream.seek(part.span.offset)
        return stream.read(part.end - part.span.offset)


@gives_back_freed_memory
@without_cyclic_gc
def parse_part(ctx: IngestContext, split: SplitFile, index: int) -> PartDone:
    """Parse and write one part of a big file (runs in a worker)."""
    part = split.parts[index]
    data = _read_part(split.file, part)
    if hashlib.sha256(data).hexdigest() != part.digest:
        return PartDone(index, None)
    try:
        result = parse_span(split.file, data, part.span, ctx.settings)
    except Exception:  # noqa: BLE001 — parsed whole, the failure becomes the file's quarantine row
        return PartDone(index, None)
    if result is None:
        return PartDone(index, None)
    unparsed = {id(q) for q in result.quarantine[: result.unparsed]}
    result, n_forgotten = without_forgotten(result, ctx.forgotten)
    read = (split.fingerprint, split.size, split.mtime_ns)
    row = log_row(ctx, split.file, read, result, n_forgotten)
    # The quarantine in the file's order: every part's records that are no JSON, then every
    # part's refused records, then every part's rows that do not fit (`subpart`s sort so).
    groups = [
        [q for q in result.quarantine if id(q) in unparsed],
        [q for q in result.quarantine if id(q) not in unparsed],
    ]
    pid, n = part_id(ctx, split), len(split.parts)
    for group, rows in enumerate(groups):
        if rows:
            batch = new_batch(ctx)
            batch.add_parsed(row, ParseResult(quarantine=rows))
            batch.write(ctx.layout, subpart(pid, group * n + index))
    batch = new_batch(ctx)
    batch.add_parsed(row, replace(result, quarantine=[]), data, span=part.span)
    del data, result
    written = batch.write(ctx.layout, subpart(pid, index), subpart(pid, 2 * n + index))
    return PartDone(index, None if batch.blamed_a_file else written[0])


def file_row(ctx: IngestContext, split: SplitFile, done: list[PartDone]) -> dict | None:
    """The file's log row from its parts' (all of them, any order); None: parse it whole."""
    rows = [d.row for d in sorted(done, key=lambda d: d.index) if d.row is not None]
    if len(rows) != len(split.parts):
        return None
    tables = {table for row in rows for table in row["tables"]}
    if any(row["n_quarantine"] for row in rows):
        tables.add(QUARANTINE_PART)  # written apart from the part's other rows
    return {
        **rows[0],
        **{column: sum(row[column] for row in rows) for column in _SUMMED},
        "pending_locators": [p for row in rows for p in row["pending_locators"]],
        "tables": in_table_order(ctx.source, tables),
        "part_id": part_id(ctx, split),
        "parsed_at": datetime.now(UTC),
    }
