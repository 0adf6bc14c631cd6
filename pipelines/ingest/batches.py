"""Bronze parts hold the rows of many raw files: one part per batch of raw files and table.

Writing (and later scanning) one tiny Parquet file per raw file and table cost milliseconds per
file, which dominated ingest and silver on corpora of many small files. A batch collects the parsed
rows of up to `batch_files` files / `batch_bytes` raw bytes (memory is bounded by the batch, not the
corpus) and writes one part per table: one partition of the table's Delta table, in one commit
(pipelines/storage/bronze.py). A part's id is a hash of its members (file, file_id), so the same
rows always land in the same part, and writing it again replaces it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cache

import polars as pl

from pipelines.config.settings import Limits
from pipelines.ingest.untypable import misfit_quarantine_row, misfits, raw_copy
from pipelines.privacy.forget import purge
from pipelines.runtime.workers import trim_malloc
from pipelines.schemas import bronze_schema, conform, frame_from_rows
from pipelines.schemas.bronze_dtypes import bronze_schemas
from pipelines.sources.base import ParseResult, raw_excerpt
from pipelines.sources.jsonio import Span
from pipelines.storage import bronze
from pipelines.storage.files import scan_parquet
from pipelines.storage.layout import Layout
from pipelines.storage.uri import storage_options

QUARANTINE_PART = "_quarantine"  # pseudo table name in a log row's `tables`

# Parsed rows are typed (and their raw bytes let go) whenever the files not yet typed reach this
# many raw bytes, not once per batch: as Python objects a batch's rows take ~3 times its raw bytes,
# and the heap they leave behind stayed in a worker's RSS (a 1 GB build's study batches of 34 MB
# raw: +97 MB parsed, +148 MB while typed at once, +188 MB writing, per worker).
TYPE_EVERY_BYTES = 8 * 1024 * 1024

PARSE_QUARANTINE_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "file": pl.String,
        "locator": pl.String,
        "error_kind": pl.String,
        "message": pl.String,
        "raw": pl.String,
        "stage": pl.String,
        "run_id": pl.String,
    }
)


def part_table(layout: Layout, source: str, table: str) -> str:
    """The Delta table holding the parts of one bronze table (or the source's QUARANTINE_PART)."""
    if table == QUARANTINE_PART:
        return str(layout.parse_quarantine_dir(source))
    return str(layout.bronze_dir(table))


def part_files(layout: Layout, source: str, table: str, part_ids: list[str]) -> list[str]:
    """The Parquet files of the given parts of one table (what readers scan)."""
    options = storage_options(layout.data_root)
    return bronze.part_files(part_table(layout, source, table), part_ids, options)


def table_schema(table: str) -> pl.Schema:
    return PARSE_QUARANTINE_SCHEMA if table == QUARANTINE_PART else bronze_schema(table)


@dataclass
class Member:
    log_row: dict
    rows: dict[str, list[dict]]  # freshly parsed bronze rows and parse-quarantine rows, per table
    frames: dict[str, pl.DataFrame]  # rows copied from an existing part, per table
    data: bytes | None = None  # a parsed file's bytes: the raw copy of a row that does not fit
    span: Span | None = None  # where `data` lie in the file, when they are one part of it


@dataclass
class Batch:
    """The rows of several raw files, waiting to be written as one part per table."""

    source: str
    run_id: str
    excerpt_chars: int = Limits().raw_excerpt_chars  # how much raw text a quarantine row keeps
    members: list[Member] = field(default_factory=list)
    raw_bytes: int = 0
    blamed_a_file: bool = False  # a member's rows could not be typed: it became one quarantine row
    # the parsed rows of members[:n_typed], typed in the members' order, per table
    typed: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    n_typed: int = 0
    untyped_bytes: int = 0

    def add_parsed(
        self,
        log_row: dict,
        result: ParseResult,
        data: bytes | None = None,
        kept: dict[str, pl.DataFrame] | None = None,
        span: Span | None = None,
    ) -> None:
        """A freshly parsed file (and its bytes, kept until the batch is written: memory stays
        bounded by the batch); its log row's `tables` is set from what it produced. `kept`: rows
        of a grown file's old records, copied from its old part (pipelines/ingest/append.py).
        `span`: `data` and the rows are one part of a big file (pipelines/ingest/split.py)."""
        unknown = result.rows.keys() - _table_order(self.source)[:-1]
        if unknown:
            raise ValueError(
                f"{self.source} adapter returned tables without a bronze model: {sorted(unknown)}"
            )
        rows = {table: r for table, r in result.rows.items() if r}
        if result.quarantine:
            rows[QUARANTINE_PART] = [
                {**q.__dict__, "stage": "parse", "run_id": self.run_id} for q in result.quarantine
            ]
        frames = {t: f for t, f in (kept or {}).items() if f.height}
        tables = in_table_order(self.source, {**rows, **frames})
        self.members.append(Member({**log_row, "tables": tables}, rows, frames, data, span))
        self.raw_bytes += log_row["size_bytes"]
        self.untyped_bytes += log_row["size_bytes"]
        if self.untyped_bytes >= TYPE_EVERY_BYTES:
            self._type_parsed_rows()

    def add_moved(self, log_row: dict, frames: dict[str, pl.DataFrame]) -> None:
        """A file whose rows are copied from the part it shared with a file that changed."""
        kept = {t: f for t, f in frames.items() if f.height}  # purging may have emptied a table
        self.members.append(
            Member({**log_row, "tables": in_table_order(self.source, kept)}, {}, kept)
        )
        self.raw_bytes += log_row["size_bytes"]

    def full(self, max_files: int, max_bytes: int) -> bool:
        return len(self.members) >= max_files or self.raw_bytes >= max_bytes

    def write(
        self, layout: Layout, part_id: str | None = None, quarantine_id: str | None = None
    ) -> list[dict]:
        """Write one part per table that has rows; return the members' log rows naming the part
        (`part_id`, else a hash of its members; QUARANTINE_PART's rows under `quarantine_id`
        when given). The batch is empty afterwards."""
        if not self.members:
            return []
        frames = self._typed()
        log_rows = [m.log_row for m in self.members]
        # Once typed, the parsed rows (Python objects, ~3.5 times the frames' bytes) and the raw
        # bytes are not needed: gone before the writes, which copy each frame again.
        self.members, self.n_typed = [], 0
        trim_malloc()
        if part_id is None:
            names = "\n".join(sorted(f"{row['file']}\0{row['file_id']}" for row in log_rows))
            part_id = hashlib.sha256(names.encode()).hexdigest()[:20]
        options = storage_options(layout.data_root)
        for table in list(frames):
            parts = frames.pop(table)  # a table's frames are let go once it is written
            frame = conform(pl.concat(parts, how="vertical_relaxed"), table_schema(table)).collect()
            del parts
            written_as = quarantine_id if table == QUARANTINE_PART and quarantine_id else part_id
            bronze.write_part(part_table(layout, self.source, table), frame, written_as, options)
            del frame
        for row in log_rows:  # each the batch's own copy (made when its member was added)
            row["part_id"] = part_id
        return log_rows

    def _typed(self) -> dict[str, list[pl.DataFrame]]:
        """Per table: the parsed rows of all members typed (in the members' order), then the
        copied frames."""
        self._type_parsed_rows()
        typed, self.typed = self.typed, {}
        for member in self.members:
            for table, frame in member.frames.items():
                typed.setdefault(table, []).append(frame)
        return typed

    def _type_parsed_rows(self) -> None:
        """Type the parsed rows of the members not typed yet, all at once, and let go of them and
        of their raw bytes (only a row that does not fit needs them)."""
        members = self.members[self.n_typed :]
        try:
            typed = self._typed_together(members)
        except Exception:  # noqa: BLE001 — some rows do not fit the contract: find them, retry
            for member in members:
                self._quarantine_misfits(member)
            try:
                typed = self._typed_together(members)
            except Exception:  # noqa: BLE001 — no single value to blame: blame the file
                self._quarantine_untypable_members(self.n_typed)
                typed = self._typed_together(self.members[self.n_typed :])
        for table, frames in typed.items():
            self.typed.setdefault(table, []).extend(frames)
        for member in self.members[self.n_typed :]:
            member.rows, member.data = {}, None
        self.n_typed = len(self.members)
        self.untyped_bytes = 0

    def _typed_together(self, members: list[Member]) -> dict[str, list[pl.DataFrame]]:
        tables = {t for m in members for t in m.rows}
        return {
            t: [frame_from_rows([r for m in members for r in m.rows.get(t, ())], table_schema(t))]
            for t in tables
        }

    def _quarantine_misfits(self, member: Member) -> None:
        """Each row whose value does not fit its column's dtype becomes one quarantine row, with
        the raw copy of its record; the file's other rows stay bronze (counts move with them)."""
        moved = []
        for table in [t for t in member.rows if t != QUARANTINE_PART]:
            rows = member.rows[table]
            found = misfits(rows, table_schema(table))
            for index, misfit in found.items():
                row = rows[index]
                raw = raw_copy(member.data, row, member.span)
                quarantined = misfit_quarantine_row(
                    self.source, table, row, misfit, raw, self.excerpt_chars
                )
                moved.append({**quarantined, "stage": "parse", "run_id": self.run_id})
            member.rows[table] = [row for i, row in enumerate(rows) if i not in found]
        if not moved:
            return
        member.rows = {t: r for t, r in member.rows.items() if r}
        member.rows.setdefault(QUARANTINE_PART, []).extend(moved)
        member.log_row = {
            **member.log_row,
            "tables": in_table_order(self.source, {**member.rows, **member.frames}),
            "n_bronze": member.log_row["n_bronze"] - len(moved),
            "n_quarantine": member.log_row["n_quarantine"] + len(moved),
        }

    def _quarantine_untypable_members(self, start: int) -> None:
        """Last resort, when no value alone is to blame: a file (of members[start:]) whose rows
        cannot be typed becomes one quarantined record for the whole file (as when its adapter
        fails), so the other files of the batch are not lost with it."""
        for i, member in enumerate(self.members[start:], start):
            for table, rows in member.rows.items():
                try:
                    frame_from_rows(rows, table_schema(table))
                except Exception as exc:  # noqa: BLE001 — turned into a specific quarantine row
                    self.members[i] = _untypable(member, self, table, exc)
                    self.blamed_a_file = True
                    break


def _untypable(member: Member, batch: Batch, table: str, exc: Exception) -> Member:
    row = member.log_row
    record = {
        "source": batch.source,
        "file": row["file"],
        "locator": "file",
        "error_kind": "unreadable",
        "message": f"rows for {table} do not fit its contract: {type(exc).__name__}: {exc}"[:2000],
        "raw": raw_excerpt(member.data, batch.excerpt_chars),
        "stage": "parse",
        "run_id": batch.run_id,
    }
    log_row = {
        **row,
        "tables": [QUARANTINE_PART],
        "records_read": 1,
        "n_bronze": 0,
        "n_quarantine": 1,
        "n_pending": 0,
        "pending_locators": [],
    }
    return Member(log_row, {QUARANTINE_PART: [record]}, {}, member.data)


@cache
def _table_order(source: str) -> tuple[str, ...]:
    """The source's bronze tables, then QUARANTINE_PART (asked per raw file: a module lookup
    each time cost ~7 µs of a tiny file's ~100)."""
    return (*bronze_schemas(source), QUARANTINE_PART)


def in_table_order(source: str, rows: dict) -> list[str]:
    return [t for t in _table_order(source) if t in rows]


def rows_of_files(
    layout: Layout,
    source: str,
    part_id: str,
    tables: set[str],
    files: list[str],
    forgotten: list[str],
) -> tuple[dict[str, dict[str, pl.DataFrame]], dict[str, int]]:
    """The rows `files` have in one existing part, per file and table, purged of forgotten subjects
    (a kept row of a vanished file can only be purged this way); and rows purged per file."""
    out: dict[str, dict[str, pl.DataFrame]] = {f: {} for f in files}
    purged: dict[str, int] = dict.fromkeys(files, 0)
    for table in sorted(tables):
        paths = part_files(layout, source, table, [part_id])
        if not paths:  # lost outside turnlake: the file's counts stop balancing, reported
            continue
        rows = (
            scan_parquet(paths, schema=table_schema(table))
            .filter(pl.col("file").is_in(files))
            .collect()
        )
        for (file,), frame in rows.partition_by("file", as_dict=True).items():
            kept, n = purge(frame, forgotten) if forgotten else (frame, 0)
            out[file][table] = kept
            purged[file] += n
    return out, purged
