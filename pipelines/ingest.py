"""Raw files → bronze parts (one immutable Parquet part per raw file and bronze table) + parse
quarantine, tracked by a per-source ingest log that works like a table manifest.

A part's name carries the raw file's key and a `part_id` (content fingerprint + parser version),
so a re-parse writes new files beside the old ones. Only the ingest log says which parts are
current, and it is replaced atomically after the parts exist; stale parts are removed after that.
A build killed at any moment therefore leaves the previous log and every part it names intact.
A file is parsed only when its fingerprint or the parser's code changed since the log saw it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import polars as pl

from pipelines.config import Settings
from pipelines.faults import crash_point
from pipelines.io import file_key, read_table, remove_file, write_parquet_atomic
from pipelines.layout import Layout
from pipelines.privacy.forget import forgotten_ids, mentions_text, purge
from pipelines.schemas import conform, frame_from_rows, polars_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.sources import adapter, jsonio
from pipelines.sources import base as source_base
from pipelines.sources.base import ParseResult, QuarantineRow, RawFile, raw_excerpt

QUARANTINE_PART = "_quarantine"  # pseudo table name in a log row's `tables`

INGEST_LOG_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "file": pl.String,
        "fingerprint": pl.String,
        "size_bytes": pl.Int64,
        "parser_version": pl.String,
        "part_id": pl.String,
        "tables": pl.List(pl.String),
        "records_read": pl.Int64,
        "n_bronze": pl.Int64,
        "n_quarantine": pl.Int64,
        "n_pending": pl.Int64,
        "n_forgotten": pl.Int64,  # records purged because they mention a forgotten subject
        "pending_locators": pl.List(pl.String),
        "run_id": pl.String,
        "parsed_at": pl.Datetime("us", "UTC"),
        "missing_since": pl.Datetime("us", "UTC"),
    }
)

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


@dataclass
class IngestReport:
    source: str
    files_seen: int = 0
    files_parsed: int = 0
    files_reused: int = 0
    files_missing: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    files_withheld: int = 0  # raw files named after a forgotten subject: not read at all
    records_read: int = 0
    n_bronze: int = 0
    n_quarantine: int = 0
    n_pending: int = 0


def _module_files(module: ModuleType) -> list[Path]:
    path = Path(module.__file__)
    return sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]


def parser_version(source: str) -> str:
    """Hash of the code that turns this source's bytes into bronze rows: changing it re-parses."""
    files = [*_module_files(adapter(source)), *_module_files(jsonio), *_module_files(source_base)]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    for model in bronze_models(source).values():
        digest.update(str(polars_schema(model)).encode())
    return digest.hexdigest()[:16]


def parse_settings_key(settings: Settings, source: str, forgotten: list[str]) -> str:
    """What changes what parsing keeps: zone of naive timestamps, limits, forgotten subjects (a new
    `forget` re-parses every file once, so no part keeps the subject)."""
    digest = hashlib.sha256("\0".join(forgotten).encode()).hexdigest()[:16]
    return f"{settings.timezone_for(source)}|{settings.limits}|{digest}"


def _without_forgotten(result: ParseResult, forgotten: list[str]) -> tuple[ParseResult, int]:
    if not forgotten:
        return result, 0
    removed = 0
    for table, frame in result.tables.items():
        result.tables[table], n = purge(frame, forgotten)
        removed += n
    kept = [q for q in result.quarantine if not mentions_text(f"{q.locator}\0{q.message}\0{q.raw or ''}", forgotten)]
    removed += len(result.quarantine) - len(kept)
    result.quarantine = kept
    return result, removed


def read_log(layout: Layout, source: str) -> pl.DataFrame:
    """The source's ingest log; a log written by an older layout counts as empty (full re-parse)."""
    log = read_table(layout.ingest_log(source), INGEST_LOG_SCHEMA)
    return log if log.schema == INGEST_LOG_SCHEMA else pl.DataFrame(schema=INGEST_LOG_SCHEMA)


def current_parts(layout: Layout, source: str, table: str) -> list[Path]:
    """The parts of one bronze table (or QUARANTINE_PART) that the ingest log names as current."""
    log = read_log(layout, source).filter(pl.col("tables").list.contains(table))
    if table == QUARANTINE_PART:
        return [layout.parse_quarantine_part(source, file_key(f), p) for f, p in log.select("file", "part_id").iter_rows()]
    return [layout.bronze_part(table, file_key(f), p) for f, p in log.select("file", "part_id").iter_rows()]


def scan_current(layout: Layout, source: str, table: str, schema: pl.Schema) -> pl.LazyFrame:
    parts = current_parts(layout, source, table)
    return pl.scan_parquet(parts, schema=schema) if parts else pl.DataFrame(schema=schema).lazy()


def _safe_parse(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    """Parse with the adapter; an adapter bug on one file quarantines that file, never the run."""
    try:
        return adapter(file.source).parse_file(file, data, settings)
    except Exception as exc:  # noqa: BLE001 — turned into a specific, visible quarantine row
        return ParseResult(records_read=1, quarantine=[QuarantineRow(
            file.source, file.rel_path, "file", "unreadable",
            f"the {file.source} adapter failed on this file: {type(exc).__name__}: {exc}",
            raw_excerpt(data, settings.limits.raw_excerpt_chars))])


def _too_large(file: RawFile, size: int, limit: int) -> ParseResult:
    return ParseResult(records_read=1, quarantine=[QuarantineRow(
        file.source, file.rel_path, "file", "too_large", f"file is {size} bytes, limit is {limit}", None)])


def _write_parts(layout: Layout, source: str, key: str, part_id: str, result: ParseResult,
                 run_id: str) -> list[str]:
    models = bronze_models(source)
    unknown = set(result.tables) - set(models)
    if unknown:
        raise ValueError(f"{source} adapter returned tables without a bronze model: {sorted(unknown)}")
    written = []
    for table, model in models.items():
        frame = result.tables.get(table)
        if frame is not None and frame.height:
            write_parquet_atomic(conform(frame, polars_schema(model)).collect(), layout.bronze_part(table, key, part_id))
            written.append(table)
    if result.quarantine:
        rows = [{**q.__dict__, "stage": "parse", "run_id": run_id} for q in result.quarantine]
        write_parquet_atomic(frame_from_rows(rows, PARSE_QUARANTINE_SCHEMA),
                             layout.parse_quarantine_part(source, key, part_id))
        written.append(QUARANTINE_PART)
    return written


def _ingest_file(file: RawFile, layout: Layout, settings: Settings, version: str, prev: dict | None,
                 run_id: str, forgotten: list[str]) -> tuple[dict, bool]:
    """The file's log row, and whether it had to be parsed."""
    size = file.path.stat().st_size
    if size > settings.limits.max_file_bytes:
        data, fingerprint = None, f"size:{size}:mtime:{file.path.stat().st_mtime_ns}"
    else:
        data = file.path.read_bytes()
        fingerprint = hashlib.sha256(data).hexdigest()
    settings_key = parse_settings_key(settings, file.source, forgotten)
    part_id = hashlib.sha256(f"{fingerprint}:{version}:{settings_key}".encode()).hexdigest()[:16]
    if prev and prev["part_id"] == part_id and prev["missing_since"] is None:
        return prev, False
    result = _too_large(file, size, settings.limits.max_file_bytes) if data is None else _safe_parse(file, data, settings)
    result, n_forgotten = _without_forgotten(result, forgotten)
    tables = _write_parts(layout, file.source, file_key(file.rel_path), part_id, result, run_id)
    return {
        "source": file.source, "file": file.rel_path, "fingerprint": fingerprint, "size_bytes": size,
        "parser_version": version, "part_id": part_id, "tables": tables,
        "records_read": result.records_read, "n_bronze": result.n_bronze,
        "n_quarantine": len(result.quarantine), "n_pending": len(result.pending), "n_forgotten": n_forgotten,
        "pending_locators": [p.locator for p in result.pending],
        "run_id": run_id, "parsed_at": datetime.now(UTC), "missing_since": None,
    }, True


def collect_bronze_garbage(layout: Layout, source: str) -> None:
    """Remove parts the ingest log no longer names, and temp files of killed writes.

    Run only after the DuckDB views were rebuilt: until then the old views may still read them.
    """
    keep = {str(p) for table in [*bronze_models(source), QUARANTINE_PART] for p in current_parts(layout, source, table)}
    folders = [layout.bronze_dir(t) for t in bronze_models(source)] + [layout.parse_quarantine_dir(source)]
    for folder in folders:
        if folder.is_dir():
            for path in folder.iterdir():
                if path.suffix in (".parquet", ".tmp") and str(path) not in keep:
                    remove_file(path)


def ingest_source(source: str, settings: Settings, run_id: str) -> IngestReport:
    """Bring this source's bronze parts up to date with the raw root."""
    layout = Layout(settings.data_root)
    previous = {row["file"]: row for row in read_log(layout, source).iter_rows(named=True)}
    version = parser_version(source)
    report = IngestReport(source)
    log_rows = []
    forgotten = forgotten_ids(Path(settings.raw_root))
    files = []
    for file in adapter(source).discover(Path(settings.raw_root)):
        if mentions_text(file.rel_path, forgotten):
            report.files_withheld += 1
            previous.pop(file.rel_path, None)  # named after a forgotten subject: not even listed
            continue
        files.append(file)
    for file in files:
        row, parsed = _ingest_file(file, layout, settings, version, previous.get(file.rel_path), run_id, forgotten)
        report.files_seen += 1
        report.files_parsed += parsed
        report.files_reused += not parsed
        log_rows.append(row)
    seen = {f.rel_path for f in files}
    for rel_path in sorted(set(previous) - seen):
        if settings.remove_deleted_files:
            report.files_removed.append(rel_path)
            continue
        report.files_missing.append(rel_path)
        log_rows.append({**previous[rel_path], "missing_since": previous[rel_path]["missing_since"] or datetime.now(UTC)})
    for row in log_rows:
        report.records_read += row["records_read"]
        report.n_bronze += row["n_bronze"]
        report.n_quarantine += row["n_quarantine"]
        report.n_pending += row["n_pending"] if row["missing_since"] is None else 0
    crash_point("ingest:before_log")
    write_parquet_atomic(frame_from_rows(log_rows, INGEST_LOG_SCHEMA), layout.ingest_log(source))
    crash_point("ingest:after_log")
    return report
