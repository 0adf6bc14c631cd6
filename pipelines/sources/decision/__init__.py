"""Adapter for `decision`: CoordinationDecision entities from SQLite databases and JSONL exports.

Layout: `decisions/**/*.sqlite` (table `coordination_decisions`) and `decisions/**/*.jsonl`.
Every row / line is one record → one `decision_records` row or one quarantine row. The same
decision in both files is reconciled in silver, not here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    QuarantineRow,
    RawFile,
    RecordError,
    expect_type,
    find_raw_files,
    quarantine_row,
    raw_excerpt,
)
from pipelines.sources.decision.record import SOURCE, record_to_row
from pipelines.sources.jsonio import read_jsonl

__all__ = ["SOURCE", "TABLE", "discover", "parse_file"]

TABLE = "decision_records"
SQLITE_TABLE = "coordination_decisions"
_TOP_FOLDER = "decisions"
_PATTERNS = {"*.sqlite": "sqlite", "*.jsonl": "jsonl"}


def discover(raw_root: Path) -> list[RawFile]:
    return find_raw_files(
        SOURCE, raw_root, [f"{_TOP_FOLDER}/**/{pattern}" for pattern in _PATTERNS]
    )


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    limits = settings.limits
    if len(data) > limits.max_file_bytes:
        return _unreadable(
            file, "too_large", f"file is {len(data)} bytes, limit is {limits.max_file_bytes}", None
        )
    if file.rel_path.endswith(".sqlite"):
        return _parse_sqlite(file, data, settings)
    return _parse_jsonl(file, data, settings)


# ---------------------------------------------------------------- JSONL export


def _parse_jsonl(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    read = read_jsonl(file, data, settings.limits)
    rows: list[dict[str, Any]] = []
    quarantine: list[QuarantineRow] = list(read.quarantine)
    for unit, obj in read.records:
        ordinal = unit.line
        try:
            expect_type(obj, dict, "a decision record")
            rows.append(_bronze_row(file, unit.locator, ordinal, "jsonl", obj, settings))
        except RecordError as err:
            quarantine.append(quarantine_row(file, unit.locator, err, obj, settings.limits))
    return _result(read.records_read, rows, quarantine)


# ---------------------------------------------------------------- SQLite database


class _Unreadable(Exception):
    pass


class _NotUtf8(bytes):
    """The bytes of a TEXT cell that are not UTF-8 (sqlite3 would abort the whole query)."""


def _text(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _NotUtf8(raw)


def _check_encoding(record: dict[str, Any]) -> None:
    for name, value in record.items():
        if isinstance(value, _NotUtf8):
            raise RecordError("invalid_encoding", f"column {name!r} holds TEXT that is not UTF-8")


def _open_database(data: bytes) -> sqlite3.Connection:
    if not data:
        raise _Unreadable("file is empty, not a SQLite database")
    conn = sqlite3.connect(":memory:")
    conn.text_factory = _text
    try:
        conn.deserialize(data)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    # A corrupt schema can also surface as UnicodeDecodeError (sqlite3 decoding names/messages).
    except (sqlite3.DatabaseError, MemoryError, OverflowError, UnicodeDecodeError) as exc:
        conn.close()
        raise _Unreadable(f"not a readable SQLite database: {exc}") from None
    if SQLITE_TABLE not in tables:
        conn.close()
        found = (
            ", ".join(
                sorted(t.decode("utf-8", "replace") if isinstance(t, bytes) else t for t in tables)
            )
            or "none"
        )
        raise _Unreadable(f"SQLite database has no table {SQLITE_TABLE!r} (tables: {found})")
    return conn


def _sqlite_rows(conn: sqlite3.Connection) -> Iterator[tuple[int, dict[str, Any]]]:
    # A column may itself be called rowid / oid / _rowid_ and shadow that alias: use a free one,
    # and take it by position, never by name.
    columns = {str(r[1]).lower() for r in conn.execute(f"PRAGMA table_info({SQLITE_TABLE})")}
    alias = next((a for a in ("rowid", "oid", "_rowid_") if a not in columns), None)
    cursor = None
    if alias is not None:
        try:
            cursor = conn.execute(f"SELECT {alias}, * FROM {SQLITE_TABLE} ORDER BY {alias}")
        except sqlite3.OperationalError:  # a WITHOUT ROWID table
            cursor = None
    with_rowid = cursor is not None
    if cursor is None:  # number rows in storage order
        cursor = conn.execute(f"SELECT * FROM {SQLITE_TABLE}")
    names = [d[0] for d in cursor.description][1 if with_rowid else 0 :]
    for position, values in enumerate(cursor, start=1):
        rowid = values[0] if with_rowid else position
        yield rowid, dict(zip(names, values[1:] if with_rowid else values, strict=True))


def _parse_sqlite(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    try:
        conn = _open_database(data)
    except _Unreadable as exc:
        return _unreadable(file, "unreadable", str(exc), data)
    rows: list[dict[str, Any]] = []
    quarantine: list[QuarantineRow] = []
    read = 0
    try:
        for rowid, record in _sqlite_rows(conn):
            read += 1
            locator = f"row id {rowid}"
            try:
                _check_encoding(record)
                rows.append(_bronze_row(file, locator, rowid, "sqlite", record, settings))
            except RecordError as err:
                quarantine.append(
                    quarantine_row(file, locator, err, _printable(record), settings.limits)
                )
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # corrupt part-way: the rest is lost
        quarantine.append(
            QuarantineRow(
                SOURCE,
                file.rel_path,
                f"after row {read}",
                "unreadable",
                f"SQLite database is corrupt after {read} rows: {exc}",
                None,
            )
        )
        read += 1
    finally:
        conn.close()
    return _result(read, rows, quarantine)


def _printable(record: dict[str, Any]) -> dict[str, Any]:
    """A row for the quarantine excerpt: BLOB columns shown by size, not as bytes."""
    return {k: f"<{len(v)} bytes>" if isinstance(v, bytes) else v for k, v in record.items()}


# ---------------------------------------------------------------- shared


def _bronze_row(
    file: RawFile, locator: str, ordinal: int, kind: str, record: dict, settings: Settings
) -> dict:
    return {
        "file": file.rel_path,
        "locator": locator,
        "ordinal": ordinal,
        "file_kind": kind,
        **record_to_row(record, settings),
    }


def _result(records_read: int, rows: list[dict], quarantine: list[QuarantineRow]) -> ParseResult:
    return ParseResult(records_read=records_read, rows={TABLE: rows}, quarantine=quarantine)


def _unreadable(file: RawFile, kind: str, message: str, data: bytes | None) -> ParseResult:
    row = QuarantineRow(
        SOURCE, file.rel_path, "file", kind, message, raw_excerpt(data[:200] if data else None)
    )
    return _result(1, [], [row])
