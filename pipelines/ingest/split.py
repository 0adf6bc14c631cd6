"""A big JSON Lines raw file is parsed as several tasks, each one line-aligned byte range (a part).

Why: parsed as one task, a file's rows (Python objects, ~6 times its bytes) are all in one worker:
the 1 GB corpus's 95 MB study master file took its worker to ~710 MB while the other worker had
nothing of it to do (bench/RESULTS.md). In parts of about SPLIT_BYTES, a worker holds one part's
rows and both workers parse parts of the same file side by side.

Which files: those whose adapter reads them record by record, each line judged alone: the question
pipelines/ingest/append.py answers with `parse_tail` (dialogue, oasst, hh_rlhf's and decision's
JSON Lines), plus a study master file (`parse_span`: a grown one is still parsed whole). Both take
a Span instead of a start offset; the adapter is asked with no bytes whether this file is read by
lines (None for gzip, SQLite, a study session file: one document, never split).

Planning reads the file once, in blocks (never whole): its sha256 (the log's fingerprint, as for a
file parsed whole), where each part starts, the line number there and each part's sha256. A part
starts at the first line starting with `{` or `[` at or after each SPLIT_BYTES-th byte: a record
starts there (pipelines/sources/jsonio.py cuts records at exactly those lines), so no record
straddles two parts and the parts' records are the file's records.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

from pipelines.config.settings import Settings
from pipelines.sources import adapter
from pipelines.sources.base import ParseResult, RawFile
from pipelines.sources.jsonio import UNIT_START, Span

# A 16 MB part of a study master file parses to ~100 MB of rows in its worker (a 64 MB batch of
# small files, `ingest.batch_mb`, to ~300 MB): the part, not the file, bounds a worker. Smaller
# parts would add per-task cost (a Delta commit per table) for little memory.
SPLIT_BYTES = 16 * 1024 * 1024
_BLOCK_BYTES = 8 * 1024 * 1024  # what planning holds of a file at a time


@dataclass(frozen=True)
class FilePart:
    span: Span  # where it starts (offset, line) and whether it runs to the file's end
    end: int  # its end offset (exclusive)
    digest: str  # sha256 of its bytes: proof, when a task reads it, that the file is unchanged


@dataclass(frozen=True)
class SplitFile:
    """A file to parse in parts, as planning read it."""

    file: RawFile
    fingerprint: str  # sha256 of the whole file, as `parse.read_raw` gives it
    size: int
    mtime_ns: int  # taken before reading, as `parse.read_raw` does
    parts: tuple[FilePart, ...]

    def part_key(self) -> str:
        """What the file's part id adds to (file, file_id): where the parts start, so pieces
        written under another split (by a killed build) are never read as this one's."""
        return "split:" + ",".join(str(p.span.offset) for p in self.parts)


def span_parser(file: RawFile):
    """The adapter function that parses a Span of this source's files, if it has one."""
    module = adapter(file.source)
    return getattr(module, "parse_span", None) or getattr(module, "parse_tail", None)


def parse_span(file: RawFile, data: bytes, span: Span, settings: Settings) -> ParseResult | None:
    """The records of the part of `file` that `data` are; None: its adapter does not read it by
    lines."""
    parse = span_parser(file)
    return None if parse is None else parse(file, data, span, settings)


def reads_by_lines(file: RawFile, settings: Settings) -> bool:
    return parse_span(file, b"", Span(0, 1, True), settings) is not None


def plan_split(file: RawFile, settings: Settings, planned_size: int) -> SplitFile | None:
    """The parts of a file above SPLIT_BYTES (`planned_size`: its size when the ingest was
    planned) that its adapter reads by lines; None: parse it whole (small, too large to read, not
    read by lines, or no record starts where a part would)."""
    if planned_size <= SPLIT_BYTES or not reads_by_lines(file, settings):
        return None
    size, mtime_ns = file.stat()
    if not SPLIT_BYTES < size <= settings.limits.max_file_bytes:
        return None
    n = math.ceil(size / SPLIT_BYTES)
    targets = [size * k // n for k in range(1, n)]
    whole, parts, read = _scan(_blocks(file), targets)
    if len(parts) < 2:
        return None
    return SplitFile(file, whole, read, mtime_ns, parts)


def _blocks(file: RawFile) -> Iterator[bytes]:
    if file.is_remote:  # an object is fetched whole
        yield file.read_bytes()
        return
    with open(file.path, "rb") as stream:
        while block := stream.read(_BLOCK_BYTES):
            yield block


def _scan(blocks: Iterator[bytes], targets: list[int]) -> tuple[str, tuple[FilePart, ...], int]:
    """One pass over the bytes: the whole file's sha256, its parts (one starting at the first
    record start at or after each target offset) and how many bytes were read."""
    whole, part = hashlib.sha256(), hashlib.sha256()
    starts, lines, digests = [0], [1], []
    pos = newlines = 0
    last_byte = b""
    remaining = list(targets)
    for block in blocks:
        whole.update(block)
        done = 0  # bytes of this block already in `part`
        while remaining:
            if remaining[0] <= starts[-1]:
                remaining.pop(0)
                continue
            found = _record_start(block, remaining[0] - pos, last_byte)
            if found is None:
                break
            part.update(block[done:found])
            digests.append(part.hexdigest())
            part = hashlib.sha256()
            newlines += block.count(b"\n", done, found)
            starts.append(pos + found)
            lines.append(1 + newlines)
            done = found
            remaining.pop(0)
        part.update(block[done:])
        newlines += block.count(b"\n", done)
        last_byte = block[-1:]
        pos += len(block)
    digests.append(part.hexdigest())
    ends = [*starts[1:], pos]
    parts = tuple(
        FilePart(Span(start, line, i == len(starts) - 1), end, digest)
        for i, (start, line, end, digest) in enumerate(
            zip(starts, lines, ends, digests, strict=True)
        )
    )
    return whole.hexdigest(), parts, pos


def _record_start(block: bytes, at_least: int, last_byte: bytes) -> int | None:
    """The first index >= `at_least` (and > 0 in the file) where a line starting a record starts
    in `block`; `last_byte`: the previous block's last byte (b"" for the file's first block)."""
    if at_least <= 0 and last_byte == b"\n" and block[:1] in (b"{", b"["):
        return 0
    found = UNIT_START.search(block, max(at_least - 1, 0))
    return None if found is None else found.start() + 1
