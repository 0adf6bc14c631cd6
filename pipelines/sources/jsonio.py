"""Reading JSON records out of raw bytes: splitting JSONL(-ish) files into records, parsing one
record within the configured limits, and turning failures into specific quarantine kinds."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import orjson

from pipelines.sources.base import (
    ParseResult,
    PendingTail,
    QuarantineRow,
    RawFile,
    RecordError,
    quarantine_row,
    raw_excerpt,
    too_large_file,
)

# ---------------------------------------------------------------- JSON records


class JsonUnit(NamedTuple):
    """One top-level JSON text cut out of a file, with where it starts (a tuple: a frozen
    dataclass cost ~1 µs more per record, a third of splitting a one-line file)."""

    line: int  # 1-based line of its first byte
    offset: int  # byte offset of its first byte
    data: bytes
    is_last: bool
    ends_with_newline: bool

    @property
    def locator(self) -> str:
        return f"line {self.line} (byte {self.offset})"


@dataclass(frozen=True)
class Span:
    """Where bytes cut out of a file lie in it: a part of a big file parsed on its own
    (pipelines/ingest/split.py). Its first byte starts a unit (a line starting with `{` or `[`),
    so the units found in it are those a whole-file split finds there."""

    offset: int  # the file offset of its first byte
    line: int  # the 1-based line of its first byte
    at_end: bool  # it runs to the file's end (only then is its last unit the file's last)


# The newline before a line starting with `{` or `[`: a literal first byte lets the regex engine
# skip ahead (`^` in multi-line mode tried every position: 14 times slower on a study master file).
UNIT_START = re.compile(rb"\n[\{\[]")
_BOM = b"\xef\xbb\xbf"


def split_json_units(data: bytes, start: int | Span = 0) -> Iterator[JsonUnit]:
    """Split a JSONL file into top-level JSON texts (from byte `start` on, a unit's first byte:
    lines and offsets still count from the file's start; or, when `start` is a Span, `data` are
    only the bytes it says where they lie, and lines, offsets and which unit is last are the
    whole file's).

    Accepts one compact object per line *and* pretty-printed objects concatenated in one file
    (as `jq` without `-c` writes them): a record starts at every line whose first byte is `{`
    or `[` — nested lines are indented, and raw newlines cannot occur inside JSON strings.
    Leading BOM and blank lines are ignored; text before the first record start is its own
    (invalid) unit so nothing is silently skipped.
    """
    if start == 0 and data[:1] in (b"{", b"[") and not UNIT_START.search(data):
        # One record from the first byte (a file of one line, the usual tiny file): what the
        # general split below finds, without its bookkeeping (~half of splitting such a file).
        yield JsonUnit(1, 0, data.rstrip(), True, data.endswith(b"\n"))
        return
    at_end, origin = True, 0
    if isinstance(start, Span):
        at_end, origin, line = start.at_end, start.offset, start.line
        base = len(_BOM) if origin == 0 and data.startswith(_BOM) else 0
    else:
        base = start or (len(_BOM) if data.startswith(_BOM) else 0)
        line = 1 + (data.count(b"\n", 0, start) if start else 0)
    data = data[base:]
    starts = [m.start() + 1 for m in UNIT_START.finditer(data)]
    if data[:1] in (b"{", b"["):
        starts.insert(0, 0)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    bounds = list(zip(starts, starts[1:] + [len(data)], strict=True))
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
            offset=origin + base + a + lead,
            data=stripped.rstrip(),
            is_last=at_end and i == len(kept) - 1,
            ends_with_newline=chunk.endswith(b"\n"),
        )


def unit_at(data: bytes, locator: str, span: Span | None = None) -> bytes | None:
    """The JSON text that `split_json_units` finds at `locator` (`line N (byte M)`), if any
    (in the part of a file that `span` says `data` are, when given)."""
    units = split_json_units(data, span or 0)
    return next((unit.data for unit in units if unit.locator == locator), None)


# A multi-byte UTF-8 sequence cut before its end, right before the closing quote of a string:
# what writers that truncate text at N bytes leave behind.
_CUT_UTF8_BEFORE_QUOTE = re.compile(
    rb"(?:[\xc2-\xdf]|[\xe0-\xef][\x80-\xbf]?|[\xf0-\xf4][\x80-\xbf]{0,2})(?=\")"
)


# A JSON string, escapes included ("unrolled" form: sre matches it several times faster than the
# equivalent `"(?:[^"\\]|\\.)*"`).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")  # bytes.translate deletes these
_NOT_BRACKETS_OR_QUOTES = bytes(b for b in range(256) if b not in b'[]{}"')
_QUOTE = ord('"')
_DEPTH_STEP = np.zeros(256, dtype=np.int64)  # a bracket byte → its change of depth
_DEPTH_STEP[list(b"{[")] = 1
_DEPTH_STEP[list(b"}]")] = -1


def _brackets_outside_strings(data: bytes) -> np.ndarray:
    """The brackets of `data` that are not inside a JSON string (an unclosed string runs to the
    end), in order, as bytes in an array. Without an escaped quote every quote delimits a string:
    keep only quotes and brackets, then the brackets after an even number of quotes (the string
    regex cost more than parsing the JSON itself; a Python list of the pieces between quotes,
    joined again, was still half of the check on 30 KB decision contexts)."""
    if b'\\"' not in data:
        kept = np.frombuffer(data.translate(None, _NOT_BRACKETS_OR_QUOTES), dtype=np.uint8)
        quote = kept == _QUOTE
        return kept[~quote & (np.cumsum(quote) % 2 == 0)]
    outside = _JSON_STRING.sub(b"", data).split(b'"', 1)[0]
    return np.frombuffer(outside.translate(None, _NOT_BRACKETS), dtype=np.uint8)


def _depth_exceeds(data: bytes, max_depth: int) -> bool:
    """Does the running bracket depth outside strings ever exceed `max_depth`? (Checked before
    parsing, so a hostile document cannot exhaust the parser.) Strings and every other byte are
    dropped in C, and the running depth is a cumulative sum in numpy: walking the brackets in
    Python cost more than orjson's parse of the record (a 30 KB decision context holds ~200)."""
    # Cheap upper bound first: a text with few brackets cannot be deep.
    if data.count(b"{") + data.count(b"[") <= max_depth:
        return False
    brackets = _brackets_outside_strings(data)
    if len(brackets) <= max_depth:
        return False
    return int(np.cumsum(_DEPTH_STEP[brackets]).max()) > max_depth


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
                if exc.reason == "unexpected end of data":  # the text stops inside a character
                    raise RecordError(
                        "invalid_json",
                        f"invalid JSON: unexpected end of data (a UTF-8 character "
                        f"cut at byte {exc.start})",
                    ) from None
                raise RecordError(
                    "invalid_encoding", f"bytes that are not UTF-8 at offset {exc.start}"
                ) from None
            try:
                return orjson.loads(repaired)
            except orjson.JSONDecodeError as again:
                raise RecordError("invalid_json", f"invalid JSON: {again}") from None
        raise RecordError("invalid_json", f"invalid JSON: {first}") from None


def load_json_file(data: bytes, *, max_bytes: int, max_depth: int) -> Any:
    """Parse a whole-file JSON document (BOM tolerated); a document cut off mid-way is
    `truncated`."""
    data = data.removeprefix(_BOM)
    if not data.strip():
        raise RecordError("truncated", "file is empty")
    try:
        return loads_record(data, max_bytes=max_bytes, max_depth=max_depth)
    except RecordError as err:
        if is_cut_short(err):
            raise RecordError(
                "truncated", f"file ends inside the JSON document ({err.message})"
            ) from None
        raise


def is_cut_short(err: RecordError) -> bool:
    """orjson reports a document that stops mid-way as 'unexpected end of data'."""
    return err.kind == "invalid_json" and "unexpected end of data" in err.message


# ---------------------------------------------------------------- JSONL reading


@dataclass
class JsonlRead:
    records: list[tuple[JsonUnit, Any]] = field(default_factory=list)
    quarantine: list[QuarantineRow] = field(default_factory=list)
    pending: list[PendingTail] = field(default_factory=list)

    @property
    def records_read(self) -> int:
        return len(self.records) + len(self.quarantine)


def read_jsonl(
    file: RawFile, data: bytes, limits: Any, *, active: bool = False, start: int | Span = 0
) -> JsonlRead:
    """Parse every record of a JSONL(-ish) file (those from byte `start` on: see
    `split_json_units`); bad ones become quarantine rows. `iter_jsonl` gives them one at a time."""
    out = JsonlRead()
    out.records.extend(iter_jsonl(file, data, limits, out, active=active, start=start))
    return out


def iter_jsonl(
    file: RawFile,
    data: bytes,
    limits: Any,
    out: JsonlRead,
    *,
    active: bool = False,
    start: int | Span = 0,
) -> Iterator[tuple[JsonUnit, Any]]:
    """The records of a JSONL(-ish) file, parsed as they are asked for; bad ones become quarantine
    rows (and pending tails) in `out`, whose `records` stays as it is. A caller that turns each
    record into its row holds one parsed record at a time, not all of a file's parsed records
    beside their rows (a 91 MB study master file parsed whole first: its parse worker peaked
    ~270 MB higher).

    The last record of an `active` file that does not parse and has no trailing newline (or that
    the parser finds cut short) is still being written: a pending tail, not a record. In a closed
    file the same thing is quarantined as `truncated`.
    """
    for unit in split_json_units(data, start):
        try:
            obj = loads_record(
                unit.data, max_bytes=limits.max_record_bytes, max_depth=limits.max_nesting_depth
            )
        except RecordError as err:
            # A pretty-printed record cut after one of its lines does end in a newline: what
            # says "cut" then is the parser running out of data.
            cut_short = unit.is_last and (not unit.ends_with_newline or is_cut_short(err))
            if cut_short and active:
                out.pending.append(
                    PendingTail(file.source, file.rel_path, unit.locator, len(unit.data))
                )
                continue
            kind = "truncated" if cut_short and err.kind == "invalid_json" else err.kind
            message = (
                err.message if kind == err.kind else f"file ends inside a record: {err.message}"
            )
            out.quarantine.append(
                QuarantineRow(
                    file.source,
                    file.rel_path,
                    unit.locator,
                    kind,
                    message,
                    raw_excerpt(unit.data, limits.raw_excerpt_chars),
                )
            )
            continue
        yield unit, obj


def jsonl_file_rows(
    file: RawFile,
    data: bytes,
    limits: Any,
    table: str,
    to_row: Callable[[Any], dict[str, Any]],
    start: int | Span = 0,
) -> ParseResult:
    """A JSON Lines file whose every record is one row of `table` (`to_row` raises RecordError for
    a record that breaks the format: it is quarantined with its own text); only the records from
    byte `start` on when given (the tail of a file that grew: pipelines/ingest/append.py; a part of
    a big file when it is a Span: pipelines/ingest/split.py)."""
    if len(data) > limits.max_file_bytes:
        return too_large_file(file, len(data), limits.max_file_bytes)
    # Records turned into rows as they are parsed (no list of them kept, per tiny file a few µs):
    # the records no JSON go first in the quarantine, as `read_jsonl` lists them.
    read = JsonlRead()
    rows: list[dict[str, Any]] = []
    refused: list[QuarantineRow] = []
    rel_path = file.rel_path
    for unit, record in iter_jsonl(file, data, limits, read, start=start):
        try:
            row = to_row(record)
        except RecordError as err:
            refused.append(quarantine_row(file, unit.locator, err, unit.data, limits))
            continue
        rows.append({"file": rel_path, "locator": unit.locator, "line": unit.line, **row})
    return ParseResult(
        records_read=len(rows) + len(refused) + len(read.quarantine),
        rows={table: rows},
        quarantine=read.quarantine + refused,
        unparsed=len(read.quarantine),
    )
