"""Adapter for the `dialogue` source: `dialogues/**/*.jsonl` (one conversation per line) and
`feedback/**/*.jsonl` (one feedback event per line).

The dataset of a file is the first folder under `dialogues/` or `feedback/` (`default` for files
directly under it). Parsing checks syntax and types only; whether an event points at an existing
conversation and turn, and whether its values are in range, is decided in silver.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    RawFile,
    dataset_of,
    find_raw_files,
)
from pipelines.sources.dialogue.records import SOURCE, conversation_row, event_row
from pipelines.sources.jsonio import Span, jsonl_file_rows

CONVERSATIONS_DIR = "dialogues"
FEEDBACK_DIR = "feedback"
CONVERSATIONS = "dialogue_conversations"
EVENTS = "dialogue_feedback_events"


def discover(raw_root: Path) -> list[RawFile]:
    return find_raw_files(
        SOURCE, raw_root, [f"{folder}/**/*.jsonl" for folder in (CONVERSATIONS_DIR, FEEDBACK_DIR)]
    )


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    return parse_tail(file, data, 0, settings)


def parse_tail(file: RawFile, data: bytes, start: int | Span, settings: Settings) -> ParseResult:
    """The records from byte `start` on: every line is a record of its own (no id or row depends
    on another line), so a file that grew is parsed by its tail (pipelines/ingest/append.py)."""
    is_feedback = file.rel_path.startswith(FEEDBACK_DIR + "/")
    table = EVENTS if is_feedback else CONVERSATIONS
    parse_record = event_row if is_feedback else conversation_row
    dataset = dataset_of(file.rel_path)
    tz = settings.timezone_for(SOURCE)
    return jsonl_file_rows(
        file,
        data,
        settings.limits,
        table,
        lambda record: parse_record(record, dataset, tz),
        start,
    )
