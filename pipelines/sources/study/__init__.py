"""Adapter for the wildfire evacuation persuasion study (`study`).

Raw layout under the raw root (anything else, e.g. backend/ or conversation_data_exports/, is not
a study output and is ignored):

    survey_responses/conversations/<session_id>.json     one session (pretty-printed)  →
    copy_kind session_file survey_responses/conversations/all_conversations.jsonl  one session
    per line       → copy_kind master survey_responses/completed/CCC###.json
    participant file             → copy_kind completed survey_responses/exits/INC###.json
    participant file             → copy_kind exit

Records: a session file is 1 record; a master line is 1 record; a participant file is 1
participant record + 1 record per entry of `conversations`.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.config.settings import Settings
from pipelines.sources.base import ParseResult, RawFile, RecordError, find_raw_files
from pipelines.sources.jsonio import Span
from pipelines.sources.study.files import Collector

SOURCE = "study"
ROOT = "survey_responses"

_PARTICIPANT_KINDS = {"completed": "completed", "exits": "exit"}


def discover(raw_root: Path) -> list[RawFile]:
    """Session files, master JSONL files, and completed/exit participant files, sorted."""
    patterns = ("conversations/*.json", "conversations/*.jsonl", "completed/*.json", "exits/*.json")
    return find_raw_files(SOURCE, raw_root, [f"{ROOT}/{pattern}" for pattern in patterns])


def copy_kind(rel_path: str) -> str:
    parts = rel_path.split("/")
    folder = parts[-2] if len(parts) >= 2 else ""
    if folder in _PARTICIPANT_KINDS:
        return _PARTICIPANT_KINDS[folder]
    return "master" if rel_path.endswith(".jsonl") else "session_file"


def parse_file(file: RawFile, data: bytes, settings: Settings) -> ParseResult:
    kind = copy_kind(file.rel_path)
    collector = Collector(file, kind, settings)
    limit = settings.limits.max_file_bytes
    if len(data) > limit:  # any kind, the master JSONL included
        collector.reject_file(
            RecordError("too_large", f"file is {len(data)} bytes, limit is {limit}"), data
        )
    elif kind == "master":
        collector.read_master(data)
    else:
        collector.read_whole_file(data)
    return collector.result()


def parse_span(file: RawFile, data: bytes, span: Span, settings: Settings) -> ParseResult | None:
    """The sessions of one part of a big master file (a session is one line, judged alone:
    pipelines/ingest/split.py); None for the other kinds, each one JSON document. Not a
    `parse_tail`: a grown master file is still parsed whole (pipelines/ingest/append.py)."""
    if copy_kind(file.rel_path) != "master":
        return None
    collector = Collector(file, "master", settings)
    collector.read_master(data, span)
    return collector.result()
