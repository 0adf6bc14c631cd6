"""Adapter for moderator–user scenario dialogs (`scenario`).

Layout: `scenarios/<state>/<SCENARIO-ID>/moderator_dialog.jsonl`. Each file is JSON Lines, or
pretty-printed objects concatenated (`jq` without `-c`). A record holding `scenario_metadata` is the
scenario's completion metadata; every other object is one dialog entry.

Decisions documented here:
- The native scenario id is the FOLDER name; the id a record claims is kept (`entry_scenario_id`).
  The logger writes to the folder named after the scenario, so the folder is what groups entries;
  a record claiming another id is kept (not quarantined) and flagged in silver.
- Only files under `scenarios/active/` may end in a half-written record (a pending tail).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.config.settings import Settings
from pipelines.schemas.bronze_dtypes import bronze_schemas
from pipelines.sources.base import (
    ParseResult,
    QuarantineRow,
    RawFile,
    RecordError,
    find_raw_files,
    quarantine_row,
    raw_excerpt,
)
from pipelines.sources.jsonio import read_jsonl
from pipelines.sources.scenario.records import FileContext, record_row

SOURCE = "scenario"
DIALOG_FILE = "moderator_dialog.jsonl"
ACTIVE_STATE = "active"


def discover(raw_root: Path) -> list[RawFile]:
    """Every `scenarios/<state>/<scenario>/moderator_dialog.jsonl`, sorted by relative path."""
    return find_raw_files(SOURCE, raw_root, [f"scenarios/*/*/{DIALOG_FILE}"])


def file_context(file: RawFile) -> FileContext:
    """State and scenario folder from `scenarios/<state>/<scenario>/…` (fallbacks for odd paths)."""
    parts = Path(file.rel_path).parts
    state = parts[-3] if len(parts) >= 3 else "unknown"
    scenario = parts[-2] if len(parts) >= 2 else Path(file.rel_path).stem
    return FileContext(file=file.rel_path, state=state, scenario_id=scenario)


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    """Each raw record → one `scenario_entries` / `scenario_metadata` row or one quarantine row."""
    limits = settings.limits
    result = ParseResult()
    if len(data) > limits.max_file_bytes:
        result.records_read = 1
        result.quarantine.append(
            QuarantineRow(
                SOURCE,
                file.rel_path,
                "file",
                "too_large",
                f"file is {len(data)} bytes, limit is {limits.max_file_bytes}",
                raw_excerpt(data[:4096], limits.raw_excerpt_chars),
            )
        )
        return result
    context = file_context(file)
    read = read_jsonl(file, data, limits, active=context.state == ACTIVE_STATE)
    rows: dict[str, list[dict]] = {table: [] for table in bronze_schemas(SOURCE)}
    quarantine = list(read.quarantine)
    tz = settings.timezone_for(SOURCE)
    for index, (unit, obj) in enumerate(read.records):
        try:
            table, row = record_row(obj, context, tz)
        except RecordError as err:
            quarantine.append(quarantine_row(file, unit.locator, err, unit.data, limits))
            continue
        rows[table].append({**row, "locator": unit.locator, "record_index": index})
    result.records_read = read.records_read
    result.quarantine = quarantine
    result.pending = read.pending
    result.rows = rows
    return result
