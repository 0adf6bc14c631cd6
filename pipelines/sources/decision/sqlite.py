"""Reading a decision SQLite database from its bytes: one record per row of
`coordination_decisions`, in rowid order.

A file that is not a SQLite database with that table is one `unreadable` record. A TEXT cell
that is not UTF-8 quarantines its row (`invalid_encoding`), not the file; a database corrupt
part-way keeps the rows read before it and adds one `unreadable` record for the rest.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from pipelines.config.settings import Settings
from pipelines.sources.base import ParseResult, QuarantineRow, RawFile, RecordError, quarantine_row
from pipelines.sources.decision.records import SOURCE, TABLE, bronze_row

SQLITE_TABLE = "coordination_decisions"


class Unreadable(Exception):
    """The bytes are not a SQLite database holding `coordination_decisions`."""


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


def open_database(data: bytes) -> sqlite3.Connection:
    if not data:
        raise Unreadable("file is empty, not a SQLite database")
    conn = sqlite3.connect(":memory:")
    conn.text_factory = _text
    try:
        conn.deserialize(data)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    # A corrupt schema can also surface as UnicodeDecodeError (sqlite3 decoding names/messages).
    except (sqlite3.DatabaseError, MemoryError, OverflowError, UnicodeDecodeError) as exc:
        conn.close()
        raise Unreadable(f"not a readable SQLite database: {exc}") from None
    if SQLITE_TABLE not in tables:
        conn.close()
        found = (
            ", ".join(
                sorted(t.decode("utf-8", "replace") if isinstance(t, bytes) else t for t in tables)
            )
            or "none"
        )
        raise Unreadable(f"SQLite database has no table {SQLITE_TABLE!r} (tables: {found})")
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


def parse_database(file: RawFile, conn: sqlite3.Connection, settings: Settings) -> ParseResult:
    """Every row of an open database → a bronze row or a quarantine row (closes `conn`)."""
    rows: list[dict[str, Any]] = []
    quarantine: list[QuarantineRow] = []
    read = 0
    try:
        for rowid, record in _sqlite_rows(conn):
            read += 1
            locator = f"row id {rowid}"
            try:
                _check_encoding(record)
                rows.append(bronze_row(file, locator, rowid, "sqlite", record, settings))
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
    return ParseResult(records_read=read, rows={TABLE: rows}, quarantine=quarantine)


def _printable(record: dict[str, Any]) -> dict[str, Any]:
    """A row for the quarantine excerpt: BLOB columns shown by size, not as bytes."""
    return {k: f"<{len(v)} bytes>" if isinstance(v, bytes) else v for k, v in record.items()}
