"""A raw file that only grew is parsed by its new tail, not whole.

Production logs grow by appending (JSONL chat logs, feedback events): re-parsing a 50 MB file
for the 500 KB written since the last build made a night's rebuild cost almost a full build.

When it applies (`may_append`, decided while planning, then proven while reading):
- the file's adapter defines `parse_tail(file, data, start, settings)`: every record is one
  line-started JSON unit and no row depends on another record (dialogue, oasst, hh_rlhf's and
  decision's JSONL files; not scenario, whose `record_index` counts the records before it, nor
  study, social_rl, hh_rlhf's gzip files or decision's SQLite, which keep whole-file parsing);
- the same parser version and parse settings as the log row (a new `forget` or opt-out changes
  the settings key: the whole file is re-parsed, as before), nothing purged from it, and it grew;
- proof that the old bytes are unchanged: the sha256 of the first `size_bytes` bytes equals the
  log's `fingerprint` (a whole-file sha256 of the old file, so the same function over the
  prefix). Size and mtime are no proof: a file whose middle changed fails it and is re-parsed
  whole, as is one that shrank.

What is re-read: the records from the start of the old file's LAST unit on. A unit's bytes run to
the next line starting with `{` or `[` (pipelines/sources/jsonio.py), so only the last one can
change when bytes are appended: a half-written last line (quarantined `truncated` in a closed
file, a pending tail in an active one) is read again with its rest, and its old row dropped, so it
is never counted twice. Rows of the earlier units are copied from the old part without parsing
(their locators give their byte offsets); the tail is parsed with lines and byte offsets counted
from the file's start, so bronze rows, ids, quarantine locators and the reconciliation counts are
those of a parse of the whole file. Whenever something cannot be proven (no such offset in a
locator, an old part that does not hold the rows its log row counts, an adapter failure on the
tail) the file is parsed whole instead.

Crash safety is the ingest's: the rows go into a new part under the file's new id; the log is
replaced last.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import polars as pl

from pipelines.config.settings import Settings
from pipelines.ingest.batches import QUARANTINE_PART, rows_of_files
from pipelines.sources import adapter
from pipelines.sources.base import ParseResult, RawFile
from pipelines.storage.layout import Layout

_UNIT_BYTE = r"^line \d+ \(byte (\d+)\)$"  # a JsonUnit's locator; group 1: its first byte


@dataclass
class Tail:
    """A proven append: the old rows kept and the parse of the bytes from `start` on."""

    start: int
    kept: dict[str, pl.DataFrame]  # per table (QUARANTINE_PART too): old rows before `start`
    result: ParseResult

    def kept_rows(self, quarantine: bool) -> int:
        return sum(f.height for t, f in self.kept.items() if (t == QUARANTINE_PART) == quarantine)


def may_append(file: RawFile, prev: dict, size: int, settings: Settings) -> bool:
    """Planning: is this changed file (same parser and settings as `prev`, its log row) worth
    reading as a grown one? Proven or refused when it is read (`read_grown`)."""
    return (
        hasattr(adapter(file.source), "parse_tail")
        and prev["size_bytes"] < size <= settings.limits.max_file_bytes
        and prev["n_forgotten"] == 0
        and len(prev["fingerprint"]) == 64  # a sha256; a too-large file's is a size stamp
    )


def read_grown(
    file: RawFile, settings: Settings, old_size: int
) -> tuple[bytes | None, str, int, int, str | None]:
    """`parse.read_raw`'s bytes, fingerprint, size and mtime, plus the sha256 of the first
    `old_size` bytes (None when the file is now shorter): one pass over the bytes for both."""
    size, mtime_ns = file.stat()
    if size > settings.limits.max_file_bytes:
        return None, f"size:{size}:mtime:{mtime_ns}", size, mtime_ns, None
    data = file.read_bytes()
    view = memoryview(data)
    digest = hashlib.sha256(view[:old_size])
    prefix = digest.hexdigest() if len(data) >= old_size else None
    digest.update(view[old_size:])
    return data, digest.hexdigest(), len(data), mtime_ns, prefix


def resume_offset(data: bytes, old_size: int) -> int:
    """Where the old file's last unit starts (a line starting with `{` or `[` within the first
    `old_size` bytes); 0 when that is the first line (nothing to keep)."""
    cut = max(data.rfind(b"\n{", 0, old_size), data.rfind(b"\n[", 0, old_size))
    return cut + 1 if cut >= 0 else 0


def tail_of(
    layout: Layout, settings: Settings, file: RawFile, prev: dict, data: bytes, forgotten: list[str]
) -> Tail | None:
    """The grown file's old rows and its parsed tail, or None: parse it whole. `data` are its
    bytes, whose first `prev["size_bytes"]` were proven to be the old file's."""
    start = resume_offset(data, prev["size_bytes"])
    if start == 0:
        return None
    kept = _old_rows_before(layout, file, prev, start, forgotten)
    if kept is None:
        return None
    try:
        result = adapter(file.source).parse_tail(file, data, start, settings)
    except Exception:  # noqa: BLE001 — the whole-file parse turns the failure into its quarantine row
        return None
    return None if result is None else Tail(start, kept, result)


def _old_rows_before(
    layout: Layout, file: RawFile, prev: dict, start: int, forgotten: list[str]
) -> dict[str, pl.DataFrame] | None:
    """The file's rows in its old part whose record starts before byte `start`; None when a row
    does not say where it starts, or the part does not hold the records the log counts."""
    copied, _ = rows_of_files(
        layout, file.source, prev["part_id"], set(prev["tables"]), [file.rel_path], forgotten
    )
    kept: dict[str, pl.DataFrame] = {}
    n_rows = 0
    for table, frame in copied[file.rel_path].items():
        offsets = frame.get_column("locator").str.extract(_UNIT_BYTE, 1).cast(pl.Int64)
        if offsets.null_count():
            return None
        n_rows += frame.height
        kept[table] = frame.filter(offsets < start)
    return kept if n_rows == prev["records_read"] else None
