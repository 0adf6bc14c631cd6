"""Reading one study file into records: a master JSONL file (one session per line), a session
file (one session), or a participant file (the participant + one session per entry of its
`conversations`, which take the file's participant id when they name none). A file that cannot
be read as its kind is one quarantined record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipelines.config.settings import Settings
from pipelines.sources.base import (
    ParseResult,
    QuarantineRow,
    RawFile,
    RecordError,
    quarantine_row,
    raw_excerpt,
)
from pipelines.sources.jsonio import JsonlRead, Span, iter_jsonl, load_json_file
from pipelines.sources.study.columns import SessionRows
from pipelines.sources.study.fast import session_values
from pipelines.sources.study.records import participant_row, session_row

SESSIONS = "study_sessions"
PARTICIPANTS = "study_participants"
PARTICIPANT_LOCATOR = "participant"
FILE_LOCATOR = "file"


def session(record: Any, tz: str, enclosing: str | None = None) -> tuple | dict:
    """A session's bronze values (`fast.session_values`) for the usual shape, else its row from
    the per-record checks (which raise the specific RecordError)."""
    return session_values(record, tz, enclosing) or session_row(record, tz, enclosing)


class Collector:
    """Accumulates bronze rows and quarantine rows for one raw file."""

    def __init__(self, file: RawFile, kind: str, settings: Settings):
        self.file = file
        self.kind = kind
        self.limits = settings.limits
        self.tz = settings.timezone_for(file.source)
        self.sessions = SessionRows()  # a master file holds ~37 k sessions at 1 GB
        self.participants: list[dict] = []
        self.quarantine: list[QuarantineRow] = []
        self.records_read = 0
        self.unparsed = 0  # a master file's lines that are no JSON, first in `quarantine`

    def result(self) -> ParseResult:
        return ParseResult(
            records_read=self.records_read,
            rows={SESSIONS: self.sessions.as_built(), PARTICIPANTS: self.participants},
            quarantine=self.quarantine,
            unparsed=self.unparsed,
        )

    def read_master(self, data: bytes, span: Span | None = None) -> None:
        # One parsed record at a time (`iter_jsonl`): at 1 GB a master file is 91 MB.
        read = JsonlRead()
        before = len(self.quarantine)
        for unit, obj in iter_jsonl(self.file, data, self.limits, read, start=span or 0):
            self._record(unit.locator, obj, lambda o: session(o, self.tz))
        # The lines that are not JSON come first, as when the file was parsed whole first.
        self.quarantine[before:before] = read.quarantine
        self.records_read += len(read.quarantine)
        self.unparsed += len(read.quarantine)

    def read_whole_file(self, data: bytes) -> None:
        try:
            obj = load_json_file(
                data,
                max_bytes=self.limits.max_record_bytes,
                max_depth=self.limits.max_nesting_depth,
            )
        except RecordError as err:
            self.reject_file(err, data)
            return
        if self.kind == "session_file":
            self._record(FILE_LOCATOR, obj, lambda o: session(o, self.tz))
        else:
            self._participant_file(obj, data)

    def _participant_file(self, obj: Any, data: bytes) -> None:
        if not isinstance(obj, dict):
            err = RecordError(
                "bad_type", f"participant file should hold an object, got {type(obj).__name__}"
            )
            self.reject_file(err, data)
            return
        self._record(
            PARTICIPANT_LOCATOR,
            obj,
            lambda o: participant_row(o, self.file.rel_path, self.tz),
            table=self.participants,
        )
        conversations = obj.get("conversations")
        if not isinstance(conversations, list):
            return  # the participant record was quarantined for it (or it is absent: no sessions)
        enclosing = obj.get("participant_id") or obj.get("participantId")
        enclosing = enclosing if isinstance(enclosing, str) else None
        for i, conversation in enumerate(conversations):
            self._record(
                f"conversations[{i}]", conversation, lambda o: session(o, self.tz, enclosing)
            )

    def _record(
        self,
        locator: str,
        obj: Any,
        build: Callable[[Any], tuple | dict],
        table: list[dict] | None = None,
    ) -> None:
        self.records_read += 1
        try:
            row = build(obj)
        except RecordError as err:
            self.quarantine.append(quarantine_row(self.file, locator, err, obj, self.limits))
            return
        if type(row) is tuple:  # a session of the usual shape: its values, placed first
            self.sessions.append_values((self.file.rel_path, locator, self.kind, *row))
            return
        row.update(file=self.file.rel_path, locator=locator)
        if table is None:
            row["copy_kind"] = self.kind
            self.sessions.append(row)
        else:
            table.append(row)

    def reject_file(self, err: RecordError, data: bytes) -> None:
        self.records_read += 1
        self.quarantine.append(
            QuarantineRow(
                self.file.source,
                self.file.rel_path,
                FILE_LOCATOR,
                err.kind,
                err.message,
                raw_excerpt(data, self.limits.raw_excerpt_chars),
            )
        )
