"""Raw files → bronze parts (one Parquet part per raw file and bronze table) + parse quarantine.

A file is parsed only when its content fingerprint or the parser's code changed since the
ingest log last saw it; otherwise its parts are reused. Files that vanished from the raw root
lose their parts, so bronze always mirrors the raw root.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import polars as pl

from pipelines.config import Settings
from pipelines.io import file_key, read_table, remove_file, write_parquet_atomic
from pipelines.layout import Layout
from pipelines.schemas import conform, frame_from_rows, polars_schema
from pipelines.schemas.bronze import bronze_models
from pipelines.sources import adapter, jsonio
from pipelines.sources import base as source_base
from pipelines.sources.base import ParseResult, QuarantineRow, RawFile, raw_excerpt

INGEST_LOG_SCHEMA = pl.Schema(
    {
        "source": pl.String,
        "file": pl.String,
        "fingerprint": pl.String,
        "size_bytes": pl.Int64,
        "parser_version": pl.String,
        "records_read": pl.Int64,
        "n_bronze": pl.Int64,
        "n_quarantine": pl.Int64,
        "n_pending": pl.Int64,
        "pending_locators": pl.List(pl.String),
        "run_id": pl.String,
        "parsed_at": pl.Datetime("us", "UTC"),
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
    files_deleted: list[str] = field(default_factory=list)
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


def _safe_parse(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    """Parse with the adapter; an adapter bug on one file quarantines that file, never the run."""
    limits = settings.limits
    if len(data) > limits.max_file_bytes:
        return ParseResult(records_read=1, quarantine=[QuarantineRow(
            file.source, file.rel_path, "file", "too_large",
            f"file is {len(data)} bytes, limit is {limits.max_file_bytes}", None)])
    try:
        return adapter(file.source).parse_file(file, data, settings)
    except Exception as exc:  # noqa: BLE001 — turned into a specific, visible quarantine row
        return ParseResult(records_read=1, quarantine=[QuarantineRow(
            file.source, file.rel_path, "file", "unreadable",
            f"the {file.source} adapter failed on this file: {type(exc).__name__}: {exc}",
            raw_excerpt(data, limits.raw_excerpt_chars))])


def _write_parts(layout: Layout, source: str, key: str, result: ParseResult, run_id: str) -> None:
    for table, model in bronze_models(source).items():
        part = layout.bronze_part(table, key)
        frame = result.tables.get(table)
        if frame is None or frame.height == 0:
            remove_file(part)
            continue
        write_parquet_atomic(conform(frame, polars_schema(model)).collect(), part)
    unknown = set(result.tables) - set(bronze_models(source))
    if unknown:
        raise ValueError(f"{source} adapter returned tables without a bronze model: {sorted(unknown)}")
    qpart = layout.parse_quarantine_dir(source) / f"{key}.parquet"
    if result.quarantine:
        rows = [{**q.__dict__, "stage": "parse", "run_id": run_id} for q in result.quarantine]
        write_parquet_atomic(frame_from_rows(rows, PARSE_QUARANTINE_SCHEMA), qpart)
    else:
        remove_file(qpart)


def _remove_parts(layout: Layout, source: str, rel_path: str) -> None:
    key = file_key(rel_path)
    for table in bronze_models(source):
        remove_file(layout.bronze_part(table, key))
    remove_file(layout.parse_quarantine_dir(source) / f"{key}.parquet")


def ingest_source(source: str, settings: Settings, run_id: str) -> IngestReport:
    """Bring this source's bronze parts up to date with the raw root."""
    layout = Layout(settings.data_root)
    log_path = layout.ingest_log(source)
    previous = {row["file"]: row for row in read_table(log_path, INGEST_LOG_SCHEMA).iter_rows(named=True)}
    version = parser_version(source)
    report = IngestReport(source)
    log_rows = []
    files = adapter(source).discover(Path(settings.raw_root))
    for file in files:
        data = file.path.read_bytes()
        fingerprint = hashlib.sha256(data).hexdigest()
        report.files_seen += 1
        prev = previous.get(file.rel_path)
        if prev and prev["fingerprint"] == fingerprint and prev["parser_version"] == version:
            row = prev
            report.files_reused += 1
        else:
            result = _safe_parse(file, data, settings)
            _write_parts(layout, source, file_key(file.rel_path), result, run_id)
            row = {
                "source": source, "file": file.rel_path, "fingerprint": fingerprint,
                "size_bytes": len(data), "parser_version": version,
                "records_read": result.records_read, "n_bronze": result.n_bronze,
                "n_quarantine": len(result.quarantine), "n_pending": len(result.pending),
                "pending_locators": [p.locator for p in result.pending],
                "run_id": run_id, "parsed_at": datetime.now(UTC),
            }
            report.files_parsed += 1
        log_rows.append(row)
        report.records_read += row["records_read"]
        report.n_bronze += row["n_bronze"]
        report.n_quarantine += row["n_quarantine"]
        report.n_pending += row["n_pending"]
    seen = {f.rel_path for f in files}
    for rel_path in sorted(set(previous) - seen):
        _remove_parts(layout, source, rel_path)
        report.files_deleted.append(rel_path)
    write_parquet_atomic(frame_from_rows(log_rows, INGEST_LOG_SCHEMA), log_path)
    return report
