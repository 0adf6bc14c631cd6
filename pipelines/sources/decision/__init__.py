"""Adapter for `decision`: CoordinationDecision entities from SQLite databases and JSONL exports.

Layout: `decisions/**/*.sqlite` (table `coordination_decisions`) and `decisions/**/*.jsonl`.
Every row / line is one record → one `decision_records` row or one quarantine row. The same
decision in both files is reconciled in silver, not here. Later ratings written by
`turnlake decision rate` (`ratings/**/*.jsonl`, append-only) are read by `ratings`, one
`decision_rating_events` row per line; replay results (`replays/**/*.jsonl`, plain or OpenAI
batch output) by `replays`, one `decision_replay_results` row per line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    QuarantineRow,
    RawFile,
    RecordError,
    find_raw_files,
    quarantine_row,
    raw_excerpt,
)
from pipelines.sources.decision.ratings import FOLDER as RATINGS_FOLDER
from pipelines.sources.decision.ratings import RATINGS_TABLE, parse_ratings
from pipelines.sources.decision.records import SOURCE, TABLE, bronze_row
from pipelines.sources.decision.replays import FOLDER as REPLAYS_FOLDER
from pipelines.sources.decision.replays import REPLAYS_TABLE, parse_replays
from pipelines.sources.decision.sqlite import (
    SQLITE_TABLE,
    Unreadable,
    open_database,
    parse_database,
)
from pipelines.sources.jsonio import Span, read_jsonl
from pipelines.sources.values import expect_type

__all__ = [
    "RATINGS_TABLE",
    "REPLAYS_TABLE",
    "SOURCE",
    "SQLITE_TABLE",
    "TABLE",
    "discover",
    "parse_file",
]

_TOP_FOLDER = "decisions"
_PATTERNS = {"*.sqlite": "sqlite", "*.jsonl": "jsonl"}


def discover(raw_root: Path) -> list[RawFile]:
    patterns = [f"{_TOP_FOLDER}/**/{pattern}" for pattern in _PATTERNS]
    later = [f"{RATINGS_FOLDER}/**/*.jsonl", f"{REPLAYS_FOLDER}/**/*.jsonl"]
    return find_raw_files(SOURCE, raw_root, [*patterns, *later])


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    limits = settings.limits
    if len(data) > limits.max_file_bytes:
        return _unreadable(
            file, "too_large", f"file is {len(data)} bytes, limit is {limits.max_file_bytes}", None
        )
    if file.rel_path.endswith(".sqlite"):
        try:
            conn = open_database(data)
        except Unreadable as exc:
            return _unreadable(file, "unreadable", str(exc), data)
        return parse_database(file, conn, settings)
    return _parse_lines(file, data, settings, 0)


def parse_tail(
    file: RawFile, data: bytes, start: int | Span, settings: Settings
) -> ParseResult | None:
    """The records from byte `start` on of a JSONL file (decisions, append-only ratings, replay
    results: each line is one row, judged alone), so a file that grew is parsed by its tail
    (pipelines/ingest/append.py); None for a SQLite database, whose bytes are no lines."""
    if file.rel_path.endswith(".sqlite") or len(data) > settings.limits.max_file_bytes:
        return None
    return _parse_lines(file, data, settings, start)


def _parse_lines(file: RawFile, data: bytes, settings: Settings, start: int | Span) -> ParseResult:
    if file.rel_path.startswith(f"{RATINGS_FOLDER}/"):
        return parse_ratings(file, data, settings, start)
    if file.rel_path.startswith(f"{REPLAYS_FOLDER}/"):
        return parse_replays(file, data, settings, start)
    return _parse_jsonl(file, data, settings, start)


def _parse_jsonl(file: RawFile, data: bytes, settings: Settings, start: int | Span) -> ParseResult:
    read = read_jsonl(file, data, settings.limits, start=start)
    rows: list[dict[str, Any]] = []
    quarantine: list[QuarantineRow] = list(read.quarantine)
    for unit, obj in read.records:
        try:
            expect_type(obj, dict, "a decision record")
            rows.append(bronze_row(file, unit.locator, unit.line, "jsonl", obj, settings))
        except RecordError as err:
            quarantine.append(quarantine_row(file, unit.locator, err, obj, settings.limits))
    return ParseResult(
        records_read=read.records_read,
        rows={TABLE: rows},
        quarantine=quarantine,
        unparsed=len(read.quarantine),
    )


def _unreadable(file: RawFile, kind: str, message: str, data: bytes | None) -> ParseResult:
    row = QuarantineRow(
        SOURCE, file.rel_path, "file", kind, message, raw_excerpt(data[:200] if data else None)
    )
    return ParseResult(records_read=1, rows={TABLE: []}, quarantine=[row])
