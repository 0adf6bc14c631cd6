"""Raw files → bronze parts + parse quarantine, tracked by a per-source ingest log that works like
a table manifest (bronze tables and logs are Delta tables: pipelines/storage/bronze.py).

Each raw file gets a `file_id` (content fingerprint + parser version + parse settings): a file is
parsed only when its file_id changed since the log saw it; one proven to have only grown is parsed
by its new tail (pipelines/ingest/append.py). Parsed rows are written in batches of
many files, one immutable part per batch and table (pipelines/ingest/batches.py); the log names, per
file, the part holding its rows. When a file changes, the other files of its old part are moved
(their rows copied) into a new part with it, so every part holds exactly the files that name it.
Parts are committed under new ids first; the log is replaced by one Delta commit last; stale parts
are deleted only after the views moved on. A build killed at any moment therefore leaves the
previous log and every part it names intact.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import polars as pl

from pipelines.config.settings import Settings
from pipelines.ingest import claimed
from pipelines.ingest.append import may_append
from pipelines.ingest.log import log_exists, log_frame, read_log, write_log
from pipelines.ingest.parse import IngestContext, file_id, read_raw
from pipelines.ingest.tasks import write_in_batches
from pipelines.privacy.forget import forgotten_ids, mentions_text
from pipelines.runtime.faults import crash_point
from pipelines.sources import adapter
from pipelines.sources.base import RawFile
from pipelines.storage.engine import code_closure_digest, package_modules
from pipelines.storage.fingerprint import fingerprint
from pipelines.storage.layout import Layout

PARSING_LINE = re.compile(r"(\w+): parsing, (\d+) of (\d+) files parsed")


@dataclass
class IngestReport:
    source: str
    files_seen: int = 0
    files_parsed: int = 0
    files_reused: int = 0
    files_moved: int = 0  # unchanged files rewritten into a new part beside a changed one
    files_appended: int = 0  # of those parsed: grown files whose new tail alone was parsed
    files_missing: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    records_read: int = 0
    n_bronze: int = 0
    n_quarantine: int = 0
    n_pending: int = 0
    parts_written: int = 0


def parser_version(source: str) -> str:
    """Digest of the code that turns this source's bytes into bronze rows: its adapter, the ingest
    package and its bronze models, with every engine module they import (the import graph, read
    from the source: no list to keep), and the dependency versions. Changing any of it re-parses;
    a change elsewhere in the engine does not (parsing reads every raw byte)."""
    roots = (
        *package_modules(f"pipelines.sources.{source}"),
        *package_modules("pipelines.ingest"),
        f"pipelines.schemas.bronze.{source}",
    )
    return code_closure_digest(roots)[:16]


def parse_settings_key(settings: Settings, source: str, forgotten: list[str]) -> str:
    """What changes what parsing keeps: zone of naive timestamps, limits, forgotten subjects (a new
    `forget` re-parses every file once, so no part keeps the subject)."""
    digest = fingerprint(forgotten)[:16]
    return f"{settings.timezone_for(source)}|{settings.limits}|{digest}"


@dataclass
class _Plan:
    keep: list[dict] = field(default_factory=list)  # log rows carried over as they are
    parse: list[RawFile] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # raw bytes of the files to parse
    move: list[dict] = field(default_factory=list)
    dropped_parts: set[str] = field(default_factory=set)  # parts losing a member: rewritten
    rows_updated: bool = False  # a kept log row changed (touched file, newly missing)
    grown: dict[str, dict] = field(default_factory=dict)  # to parse: may have only grown

    @property
    def log_changes(self) -> bool:
        return bool(self.parse or self.move or self.dropped_parts or self.rows_updated)


def _unchanged(
    file: RawFile, prev: dict, stat: tuple[int, int], ctx: IngestContext, plan: _Plan
) -> bool:
    """A file parsed by this code and these settings whose bytes are those of its log row: kept
    (a touched one with its new mtime). Same size and mtime as when last read is trusted as
    unchanged without reading it (as rsync and git do; `[ingest] rehash_unchanged = true`
    re-reads and hashes every file); another size is another content, not read to know it."""
    if not ctx.settings.ingest_rehash_unchanged and stat == (prev["size_bytes"], prev["mtime_ns"]):
        plan.keep.append(prev)
        return True
    if stat[0] != prev["size_bytes"]:
        return False
    _, fingerprint, _, mtime_ns = read_raw(file, ctx.settings)
    if prev["file_id"] != file_id(fingerprint, ctx.version, ctx.settings_key):
        return False
    plan.keep.append({**prev, "mtime_ns": mtime_ns})
    plan.rows_updated = True
    return True


def _plan(
    files: list[RawFile], previous: dict[str, dict], ctx: IngestContext, report: IngestReport
) -> _Plan:
    plan = _Plan()
    for file in files:
        prev = previous.pop(file.rel_path, None)
        same_parse = (
            prev is not None
            and prev["missing_since"] is None
            and (prev["parser_version"], prev["parse_settings"]) == (ctx.version, ctx.settings_key)
        )
        stat = file.stat()
        if same_parse and _unchanged(file, prev, stat, ctx, plan):
            continue
        if same_parse and may_append(file, prev, stat[0], ctx.settings):
            plan.grown[file.rel_path] = prev
        plan.parse.append(file)
        plan.sizes[file.rel_path] = stat[0]
        if prev is not None:
            plan.dropped_parts.add(prev["part_id"])
    for rel_path in sorted(previous):  # in the log, not in the raw root (any more)
        prev = previous[rel_path]
        if ctx.settings.remove_deleted_files or prev["withheld"]:
            if not prev["withheld"]:
                report.files_removed.append(rel_path)
            plan.dropped_parts.add(prev["part_id"])
            continue
        report.files_missing.append(rel_path)
        plan.rows_updated |= prev["missing_since"] is None
        plan.keep.append({**prev, "missing_since": prev["missing_since"] or datetime.now(UTC)})
        if (
            prev["parse_settings"] != ctx.settings_key
        ):  # e.g. a subject forgotten since: purge its rows
            plan.dropped_parts.add(prev["part_id"])
    plan.move = [row for row in plan.keep if row["part_id"] in plan.dropped_parts]
    plan.keep = [row for row in plan.keep if row["part_id"] not in plan.dropped_parts]
    return plan


def parsing_message(source: str, done: int, total: int) -> str:
    """The log line a bronze step writes while it parses (read back by the progress display)."""
    return f"{source}: parsing, {done} of {total} files parsed"


def read_parsing_message(text: str) -> tuple[str, int, int] | None:
    """(source, done, total) of a `parsing_message` line; None for any other line."""
    found = PARSING_LINE.fullmatch(text)
    return (found[1], int(found[2]), int(found[3])) if found else None


def ingest_source(
    source: str,
    settings: Settings,
    run_id: str,
    progress: Callable[[int, int], None] | None = None,
) -> IngestReport:
    """Bring this source's bronze parts up to date with the raw root; `progress(done, total)` is
    told the files parsed so far of those to parse, after each batch."""
    layout = Layout(settings.data_root)
    forgotten = forgotten_ids(settings.raw_root)
    ctx = IngestContext(
        layout,
        settings,
        source,
        parser_version(source),
        parse_settings_key(settings, source, forgotten),
        forgotten,
        run_id,
    )
    logged = read_log(layout, source)
    previous = {row["file"]: {**row, "withheld": False} for row in logged.iter_rows(named=True)}
    report = IngestReport(source)
    files = []
    discover = adapter(source).discover
    discovered = discover(settings.raw_root)
    claimed.remember(settings.raw_root, discover, (file.rel_path for file in discovered))
    for file in discovered:
        if mentions_text(file.rel_path, forgotten):
            if file.rel_path in previous:  # named after a forgotten subject: its rows go, unlisted
                previous[file.rel_path]["withheld"] = True
            continue
        files.append(file)
    plan = _plan(files, previous, ctx, report)
    ctx = replace(ctx, grown=plan.grown)
    parsed = (lambda done: progress(done, len(plan.parse))) if progress else None
    written = write_in_batches(ctx, plan.parse, plan.sizes, plan.move, parsed)
    new_rows = written.frame()
    report.files_seen = len(files)
    report.files_parsed = len(plan.parse)
    report.files_moved = len(plan.move)
    report.files_reused = len(files) - len(plan.parse)
    report.parts_written = new_rows["part_id"].n_unique()
    report.files_appended = written.appended
    # the log as a frame (without a row's "withheld" mark), summed in Polars: a Python pass over
    # its rows cost 0.5 s per 100 k in the step's one process. Without a change every logged row
    # is kept as it was: the log read is the log.
    log = pl.concat([log_frame(plan.keep), new_rows]) if plan.log_changes else logged
    report.records_read, report.n_bronze, report.n_quarantine, report.n_pending = log.select(
        pl.sum("records_read", "n_bronze", "n_quarantine"),
        pl.col("n_pending").filter(pl.col("missing_since").is_null()).sum(),
    ).row(0)
    crash_point("ingest:before_log")
    if plan.log_changes or not log_exists(layout, source):
        write_log(layout, source, log.sort("file"))
    crash_point("ingest:after_log")
    return report
