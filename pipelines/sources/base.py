"""What every source adapter shares: raw-file handles, parse results, quarantine rows,
splitting JSON files into records, timestamp normalisation and deterministic ids.

No Dagster imports here: adapters are plain functions over bytes.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import polars as pl

# The fixed vocabulary of quarantine reasons. Keep it small: operators group by it.
ERROR_KINDS: tuple[str, ...] = (
    "invalid_json",  # not parseable as JSON
    "invalid_encoding",  # bytes that are not UTF-8 (beyond a cut multi-byte character)
    "truncated",  # a record or file that ends mid-way (and is not an active file's pending tail)
    "missing_field",  # a required field is absent or null
    "bad_type",  # a field has the wrong JSON type
    "bad_value",  # right type, impossible value (absurd timestamp, rating out of range, ...)
    "orphan",  # refers to something that does not exist (unknown conversation, turn)
    "duplicate_conflict",  # same id, different content, and no rule to pick one
    "too_large",  # exceeds a configured limit (record size, nesting depth, decompressed size)
    "unreadable",  # the file itself cannot be opened as its format (e.g. not SQLite)
)


class RecordError(Exception):
    """Raised by an adapter for one bad record; becomes one quarantine row."""

    def __init__(self, kind: str, message: str):
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class RawFile:
    """One raw file of one source. `rel_path` (POSIX, relative to the raw root) is its identity."""

    source: str
    path: Path
    rel_path: str

    @classmethod
    def under(cls, source: str, raw_root: Path, path: Path) -> RawFile:
        return cls(source=source, path=path, rel_path=path.relative_to(raw_root).as_posix())


@dataclass(frozen=True)
class QuarantineRow:
    source: str
    file: str
    locator: str
    error_kind: str
    message: str
    raw: str | None


@dataclass(frozen=True)
class PendingTail:
    """The incomplete last record of an active file: reported, retried next run, not quarantined."""

    source: str
    file: str
    locator: str
    n_bytes: int


@dataclass
class ParseResult:
    """Everything one raw file turned into.

    Invariant checked downstream (nothing lost): `records_read` counts the raw records the
    reader *found* in the file, and each of them is exactly one bronze row (in any of
    `tables`) or one quarantine row. Pending tails are not records yet.
    """

    records_read: int = 0
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    quarantine: list[QuarantineRow] = field(default_factory=list)
    pending: list[PendingTail] = field(default_factory=list)

    @property
    def n_bronze(self) -> int:
        return sum(t.height for t in self.tables.values())


def raw_excerpt(raw: bytes | str | None, limit: int = 2000) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, bytes):
        raw = raw[: limit * 4].decode("utf-8", errors="replace")
    return raw if len(raw) <= limit else raw[:limit] + f"… [{len(raw) - limit} more chars]"


# ---------------------------------------------------------------- JSON records


@dataclass(frozen=True)
class JsonUnit:
    """One top-level JSON text cut out of a file, with where it starts."""

    line: int  # 1-based line of its first byte
    offset: int  # byte offset of its first byte
    data: bytes
    is_last: bool
    ends_with_newline: bool

    @property
    def locator(self) -> str:
        return f"line {self.line} (byte {self.offset})"


_UNIT_START = re.compile(rb"^[\{\[]", re.M)
_BOM = b"\xef\xbb\xbf"


def split_json_units(data: bytes) -> Iterator[JsonUnit]:
    """Split a JSONL file into top-level JSON texts.

    Accepts one compact object per line *and* pretty-printed objects concatenated in one file
    (as `jq` without `-c` writes them): a record starts at every line whose first byte is `{`
    or `[` — nested lines are indented, and raw newlines cannot occur inside JSON strings.
    Leading BOM and blank lines are ignored; text before the first record start is its own
    (invalid) unit so nothing is silently skipped.
    """
    bom = len(_BOM) if data.startswith(_BOM) else 0
    data = data[bom:]
    starts = [m.start() for m in _UNIT_START.finditer(data)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    bounds = list(zip(starts, starts[1:] + [len(data)], strict=True))
    line = 1
    prev = 0
    kept = [(a, b) for a, b in bounds if data[a:b].strip()]
    for i, (a, b) in enumerate(kept):
        line += data.count(b"\n", prev, a)
        prev = a
        chunk = data[a:b]
        # Skip leading blank lines inside the chunk so the locator points at the record itself.
        stripped = chunk.lstrip()
        lead = len(chunk) - len(stripped)
        unit_line = line + chunk.count(b"\n", 0, lead)
        yield JsonUnit(
            line=unit_line,
            offset=bom + a + lead,
            data=stripped.rstrip(),
            is_last=i == len(kept) - 1,
            ends_with_newline=chunk.endswith(b"\n"),
        )


# A multi-byte UTF-8 sequence cut before its end, right before the closing quote of a string:
# what writers that truncate text at N bytes leave behind.
_CUT_UTF8_BEFORE_QUOTE = re.compile(
    rb"(?:[\xc2-\xdf]|[\xe0-\xef][\x80-\xbf]?|[\xf0-\xf4][\x80-\xbf]{0,2})(?=\")"
)


def _depth_exceeds(data: bytes, max_depth: int) -> bool:
    # Cheap upper bound first: a text with few brackets cannot be deep.
    if data.count(b"{") + data.count(b"[") <= max_depth:
        return False
    depth = 0
    in_str = False
    esc = False
    for ch in data:
        if in_str:
            if esc:
                esc = False
            elif ch == 0x5C:
                esc = True
            elif ch == 0x22:
                in_str = False
        elif ch == 0x22:
            in_str = True
        elif ch in (0x7B, 0x5B):
            depth += 1
            if depth > max_depth:
                return True
        elif ch in (0x7D, 0x5D):
            depth -= 1
    return False


def loads_record(data: bytes, *, max_bytes: int, max_depth: int) -> Any:
    """Parse one JSON text or raise RecordError with a specific kind.

    Repairs exactly one known artefact: a UTF-8 character split by a byte-limit cut just
    before a string's closing quote (the partial character is dropped).
    """
    if len(data) > max_bytes:
        raise RecordError("too_large", f"record is {len(data)} bytes, limit is {max_bytes}")
    if _depth_exceeds(data, max_depth):
        raise RecordError("too_large", f"record nests deeper than {max_depth} levels")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as first:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            repaired = _CUT_UTF8_BEFORE_QUOTE.sub(b"", data)
            try:
                repaired.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RecordError(
                    "invalid_encoding", f"bytes that are not UTF-8 at offset {exc.start}"
                ) from None
            try:
                return orjson.loads(repaired)
            except orjson.JSONDecodeError as again:
                raise RecordError("invalid_json", f"invalid JSON: {again}") from None
        raise RecordError("invalid_json", f"invalid JSON: {first}") from None


def load_json_file(data: bytes, *, max_bytes: int, max_depth: int) -> Any:
    """Parse a whole-file JSON document (BOM tolerated)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if not data.strip():
        raise RecordError("truncated", "file is empty")
    return loads_record(data, max_bytes=max_bytes, max_depth=max_depth)


def dumps(obj: Any) -> str:
    """Deterministic JSON text (sorted keys) for attribute/extra columns and hashing."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def dumps_or_none(obj: Any) -> str | None:
    return None if obj is None or obj == {} else dumps(obj)


# ---------------------------------------------------------------- ids


def stable_hash(*parts: Any, length: int = 20) -> str:
    """Deterministic short hash of any JSON-able parts (same input, same id, every run)."""
    return hashlib.sha256(dumps(list(parts)).encode()).hexdigest()[:length]


def content_hash(text: str | bytes) -> str:
    if isinstance(text, str):
        text = text.encode()
    return hashlib.sha256(text).hexdigest()


# ---------------------------------------------------------------- timestamps

_MIN_TS = datetime(1990, 1, 1, tzinfo=UTC)
_MAX_TS = datetime(2100, 1, 1, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_ts(value: Any, tz: str = "UTC") -> datetime | None:
    """Normalise a source timestamp to an aware UTC datetime (microseconds).

    Accepts ISO-8601 with `Z`, with an offset or naive (read in `tz`), and epoch numbers in
    seconds, milliseconds or microseconds (as numbers or numeric strings). None/"" → None.
    Raises RecordError(bad_type | bad_value) for anything else, including absurd dates.
    """
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise RecordError("bad_type", f"timestamp is a boolean: {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            number = None
        if number is not None:
            return parse_ts(number, tz)
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise RecordError("bad_value", f"unparseable timestamp {value!r}") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=ZoneInfo(tz))
        result = parsed.astimezone(UTC)
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise RecordError("bad_value", f"timestamp is not finite: {value!r}")
        magnitude = abs(value)
        if magnitude < 1e11:
            seconds = value
        elif magnitude < 1e14:
            seconds = value / 1e3
        else:
            seconds = value / 1e6
        try:
            result = _EPOCH + timedelta(seconds=seconds)
        except OverflowError:
            raise RecordError("bad_value", f"timestamp out of range: {value!r}") from None
    else:
        raise RecordError("bad_type", f"timestamp has type {type(value).__name__}")
    if not _MIN_TS <= result < _MAX_TS:
        raise RecordError("bad_value", f"timestamp {value!r} is outside 1990–2100")
    return result


# ---------------------------------------------------------------- field access


def require(record: dict, *names: str) -> Any:
    """The first present, non-null field among `names` (alternative spellings), else missing_field."""
    for name in names:
        value = record.get(name)
        if value is not None:
            return value
    raise RecordError("missing_field", f"missing field {' / '.join(repr(n) for n in names)}")


def first_of(record: dict, *names: str, default: Any = None) -> Any:
    for name in names:
        value = record.get(name)
        if value is not None:
            return value
    return default


def expect_type(value: Any, types: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise RecordError("bad_type", f"{what} should be {names}, got {type(value).__name__}")
    return value


def as_float(value: Any, what: str) -> float | None:
    """Numbers stored as strings are accepted ("5" → 5.0); NaN/inf and non-numbers are not."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise RecordError("bad_type", f"{what} is a boolean")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise RecordError("bad_type", f"{what} is not a number: {value!r}") from None
    if not isinstance(value, (int, float)):
        raise RecordError("bad_type", f"{what} should be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise RecordError("bad_value", f"{what} is not finite: {value!r}")
    return float(value)


def unknown_fields(record: dict, known: set[str] | frozenset[str]) -> dict | None:
    """Fields an adapter does not map: kept verbatim in an `extra` JSON column."""
    extra = {k: v for k, v in record.items() if k not in known}
    return extra or None


# ---------------------------------------------------------------- JSONL reading


@dataclass
class JsonlRead:
    records: list[tuple[JsonUnit, Any]] = field(default_factory=list)
    quarantine: list[QuarantineRow] = field(default_factory=list)
    pending: list[PendingTail] = field(default_factory=list)

    @property
    def records_read(self) -> int:
        return len(self.records) + len(self.quarantine)


def read_jsonl(file: RawFile, data: bytes, limits: Any, *, active: bool = False) -> JsonlRead:
    """Parse every record of a JSONL(-ish) file; bad ones become quarantine rows.

    The last record of an `active` file that does not parse and has no trailing newline is
    still being written: it is a pending tail, not a record. In a closed file the same thing
    is quarantined as `truncated`.
    """
    out = JsonlRead()
    for unit in split_json_units(data):
        try:
            obj = loads_record(
                unit.data, max_bytes=limits.max_record_bytes, max_depth=limits.max_nesting_depth
            )
        except RecordError as err:
            cut_short = unit.is_last and not unit.ends_with_newline
            if cut_short and active:
                out.pending.append(PendingTail(file.source, file.rel_path, unit.locator, len(unit.data)))
                continue
            kind = "truncated" if cut_short and err.kind == "invalid_json" else err.kind
            message = err.message if kind == err.kind else f"file ends inside a record: {err.message}"
            out.quarantine.append(
                QuarantineRow(file.source, file.rel_path, unit.locator, kind, message,
                              raw_excerpt(unit.data, limits.raw_excerpt_chars))
            )
            continue
        out.records.append((unit, obj))
    return out


def quarantine_row(file: RawFile, locator: str, err: RecordError, raw: Any, limits: Any) -> QuarantineRow:
    """A quarantine row for a record that parsed as JSON but broke a rule of its format."""
    text = raw if isinstance(raw, (bytes, str)) or raw is None else dumps_safe(raw)
    return QuarantineRow(file.source, file.rel_path, locator, err.kind, err.message,
                         raw_excerpt(text, limits.raw_excerpt_chars))


def dumps_safe(obj: Any) -> str:
    try:
        return dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return repr(obj)
